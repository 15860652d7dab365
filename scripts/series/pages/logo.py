"""The site's logo, one drawing written twice: `logo.svg` for the header and the browser tab, and
`logo.png` for the RSS feed, whose channel image must be a GIF, JPEG or PNG at most 144 px wide.

The drawing is a trace timeline in miniature: a host op, the launches it makes, and the kernels that
start a little later on the GPU. `python -m scripts.series.pages.logo` rewrites both files; a test checks that
the committed ones are what this module draws, so the two cannot drift apart.
"""

from __future__ import annotations

import io
from pathlib import Path

ASSETS = Path(__file__).resolve().parents[3] / "docs" / "assets"
SIZE = 64  # the drawing's units; the PNG is PNG_PIXELS wide
PNG_PIXELS = 144
BACKGROUND = "#bf360c"  # the site's primary colour (extra.css), white bars pass contrast on it
CORNER = 14
# (x, y, width, height), y downwards as in SVG: one lane per row of a profiler timeline.
BARS = [
    (10, 14, 30, 8), (43, 14, 11, 8),  # two Python ops on the host
    (12, 28, 5, 8), (24, 28, 5, 8), (45, 28, 5, 8),  # the launches they make
    (17, 42, 11, 8), (30, 42, 13, 8), (46, 42, 8, 8),  # the kernels, each a little after its launch
]


def svg() -> str:
    bars = "".join(f'<rect x="{x}" y="{y}" width="{w}" height="{h}" rx="2"/>' for x, y, w, h in BARS)
    return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {SIZE} {SIZE}" role="img" '
            f'aria-label="Profiling PyTorch, executed">'
            f'<rect width="{SIZE}" height="{SIZE}" rx="{CORNER}" fill="{BACKGROUND}"/>'
            f'<g fill="#fff">{bars}</g></svg>\n')


def png() -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt
    from matplotlib.patches import FancyBboxPatch

    inches = PNG_PIXELS / 100
    figure = plt.figure(figsize=(inches, inches), dpi=100)
    axes = figure.add_axes((0, 0, 1, 1))
    axes.set_xlim(0, SIZE)
    axes.set_ylim(SIZE, 0)  # y downwards, as in the SVG
    axes.set_axis_off()
    figure.patch.set_alpha(0)

    def rounded(x, y, w, h, radius, colour):
        axes.add_patch(FancyBboxPatch((x + radius, y + radius), w - 2 * radius, h - 2 * radius,
                                      boxstyle=f"round,pad={radius}", linewidth=0, facecolor=colour))

    rounded(0, 0, SIZE, SIZE, CORNER, BACKGROUND)
    for x, y, w, h in BARS:
        rounded(x, y, w, h, 2, "#ffffff")
    out = io.BytesIO()
    figure.savefig(out, format="png", dpi=100, transparent=True, metadata={"Software": None})
    plt.close(figure)
    return out.getvalue()


def write(assets: Path = ASSETS) -> list[Path]:
    written = [assets / "logo.svg", assets / "logo.png"]
    written[0].write_text(svg(), encoding="utf-8")
    written[1].write_bytes(png())
    return written


if __name__ == "__main__":
    for path in write():
        print(f"wrote {path.relative_to(ASSETS.parent.parent)}")
