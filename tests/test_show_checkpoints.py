"""The lesson 07 figure draws what a checkpoint holds, with the tag it is given."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402

from helpers.show.checkpoints import draw_checkpoint_contents  # noqa: E402


def test_checkpoint_contents_shows_the_tag_and_both_switches():
    fig, ax = draw_checkpoint_contents(tag="cuda:1")
    texts = [t.get_text() for t in ax.texts]
    joined = "\n".join(texts)
    assert "weights_only=True" in joined and "map_location='cpu'" in joined
    assert "data.pkl" in joined
    pickled = next(t for t in texts if t.startswith("data.pkl"))
    assert "location 'cuda:1'" in pickled                     # the tag is in the pickled structure
    assert sum(t.startswith("data/") for t in texts) == 2      # and two storages hold the bytes
    assert "diagram" in ax.get_title()
    assert len(ax.patches) >= 5                                # the file, its three parts, the two switches
    plt.close(fig)
