// Where the ipywidgets HTML manager lies, relative to this page. Its modules load their icon fonts
// from the folder of their own URL, which RequireJS would otherwise resolve against the page's
// own folder (the site's root only for top-level pages).
(function () {
  var widgets = (document.documentElement.dataset.content_root || "./") + "_static/widgets/dist";
  require.config({
    paths: { "@jupyter-widgets/html-manager/dist": widgets, "@jupyter-widgets": widgets },
  });
})();
