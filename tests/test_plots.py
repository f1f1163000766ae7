"""bertkit/core/plots.py: what the plots of every command are drawn with."""

import numpy as np
import pytest


def test_japanese_labels_are_drawn_with_a_cjk_font_not_as_boxes():
    """Without a usable CJK font every kanji is the same empty box: two different ones then draw
    the same pixels. (matplotlib falls back between fonts only across named families: a generic
    `sans-serif` family resolves to its first font alone.)"""
    from matplotlib import font_manager

    from bertkit.core.plots import CJK_FONTS, pyplot

    plt = pyplot()
    if not {f.name for f in font_manager.fontManager.ttflist} & set(CJK_FONTS):
        pytest.skip("no CJK font installed (pip install -e '.[ja]')")
    drawn = []
    for label in ("東", "京"):
        fig = plt.figure(figsize=(0.6, 0.6), dpi=60)
        fig.text(0.1, 0.1, label, fontsize=24)
        fig.canvas.draw()
        drawn.append(np.asarray(fig.canvas.buffer_rgba()).copy())
        plt.close(fig)
    assert not np.array_equal(*drawn)
