"""make bench's pictures and verdicts: how a cost grows with its size
(growth, verdict) and a cost curve drawn as SVG (svg_plot), written under
bench/."""

import math
import os

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


def growth(points):
    """How y grows with x over points [(x, y)]: the slope of log y over
    log x from the first point to the last, and its name."""
    import math
    (x0, y0), (x1, y1) = points[0], points[-1]
    if x0 <= 0 or x1 <= x0 or y0 <= 0 or y1 <= 0:
        return 0.0, "flat"
    k = math.log(y1 / y0) / math.log(x1 / x0)
    if abs(k) < 0.15:
        name = "flat"
    elif k < 0:
        name = "falling"
    elif k < 0.8:
        name = "sublinear"
    elif k <= 1.2:
        name = "linear"
    else:
        name = "worse than linear"
    return k, name


def verdict(what, points, over, expected, why):
    """One line: what grows <flat/linear/...> over `over` (log-log slope k),
    why; the expectation (a name or a tuple of names) is named when the
    data disagree with it."""
    k, name = growth(points)
    expected = (expected,) if isinstance(expected, str) else expected
    line = "%s is %s %s (log-log slope %.2f): %s" % (what, name, over, k, why)
    if name not in expected:
        line += " (expected %s; see docs/performance.md)" % " or ".join(expected)
    return line


SVG_COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e")


def svg_plot(name, title, xlabel, ylabel, series, xticks, notes=(), ylog=True):
    """Write bench/<name>: series [(label, [(x, y)])] on a log x axis
    (ticks xticks [(x, label)]) and a log (or linear) y axis, with notes
    printed under the plot."""
    import math
    import textwrap
    W, H, L, R, T, B = 780, 420, 80, 210, 40, 60
    notes = [w for n in notes for w in textwrap.wrap(n, 118)]
    H2 = H + 16 * len(notes)
    xs = [x for _, pts in series for x, _ in pts]
    ys = [y for _, pts in series for _, y in pts if y > 0 or not ylog]
    lx0, lx1 = math.log10(min(xs)), math.log10(max(xs))
    if lx1 == lx0:
        lx1 = lx0 + 1
    if ylog:
        ly0 = math.floor(math.log10(min(ys)))
        ly1 = math.ceil(math.log10(max(ys)))
        if ly1 == ly0:
            ly1 += 1
        yticks = [(10 ** e, "%g" % 10 ** e) for e in range(ly0, ly1 + 1)]
    else:
        top = max(ys) * 1.1 or 1.0
        step = 10 ** math.floor(math.log10(top / 4))
        step *= 2 if top / step > 8 else 1
        ly0, ly1 = 0.0, math.ceil(top / step) * step
        yticks = [(v * step, "%g" % (v * step)) for v in range(int(ly1 / step) + 1)]

    def px(x):
        return L + (math.log10(x) - lx0) / (lx1 - lx0) * (W - L - R)

    def py(y):
        v = math.log10(y) if ylog else y
        return T + (1 - (v - ly0) / (ly1 - ly0)) * (H - T - B)

    o = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
         'font-family="sans-serif" font-size="12">' % (W, H2),
         '<rect width="100%" height="100%" fill="white"/>',
         '<text x="%d" y="22" font-size="15" font-weight="bold">%s</text>' % (L, title)]
    for y, lab in yticks:
        o.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/>'
                 % (L, W - R, py(y), py(y)))
        o.append('<text x="%d" y="%.1f" text-anchor="end">%s</text>' % (L - 6, py(y) + 4, lab))
    for x, lab in xticks:
        o.append('<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#ddd"/>'
                 % (px(x), px(x), T, H - B))
        o.append('<text x="%.1f" y="%d" text-anchor="middle">%s</text>'
                 % (px(x), H - B + 16, lab))
    o.append('<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#444"/>'
             % (L, T, W - L - R, H - T - B))
    o.append('<text x="%d" y="%d" text-anchor="middle">%s</text>'
             % ((L + W - R) / 2, H - B + 36, xlabel))
    o.append('<text transform="translate(18,%d) rotate(-90)" text-anchor="middle">%s</text>'
             % ((T + H - B) / 2, ylabel))
    for i, (label, pts) in enumerate(series):
        c = SVG_COLORS[i % len(SVG_COLORS)]
        pts = [(x, y) for x, y in pts if y > 0 or not ylog]
        o.append('<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>'
                 % (c, " ".join("%.1f,%.1f" % (px(x), py(y)) for x, y in pts)))
        for x, y in pts:
            o.append('<circle cx="%.1f" cy="%.1f" r="3" fill="%s"><title>%s: %g</title>'
                     '</circle>' % (px(x), py(y), c, label, y))
        o.append('<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" stroke-width="2"/>'
                 % (W - R + 10, W - R + 30, T + 10 + 18 * i, T + 10 + 18 * i, c))
        o.append('<text x="%d" y="%d">%s</text>' % (W - R + 34, T + 14 + 18 * i, label))
    for i, n in enumerate(notes):
        o.append('<text x="%d" y="%d" font-size="11">%s</text>'
                 % (10, H + 4 + 16 * i, n.replace("&", "&amp;").replace("<", "&lt;")))
    o.append("</svg>")
    with open(os.path.join(TOP, "bench", name), "w") as f:
        f.write("\n".join(o) + "\n")
