#!/usr/bin/env python3
# Copyright 2026 The zbrokers Authors.
"""Renders zb-latency's SVG plots with rsvg-convert and checks the pixels.

Usage: check_svg.py SAMPLES_EXE      (writes sample plots, checks each)
       check_svg.py --file PLOT.svg  (checks one plot)

SAMPLES_EXE is latency_svg_samples, which writes synthetic plots of known
shape (a clean run, a noisy one with a far p99 and poor fits, a --grow
clients run, a negative slope, 256 workers with five-digit latencies, a
pinned run) into a folder.  For every plot:

  - the PNG has the SVG's size;
  - the legend, drawn alone on a canvas with a wide margin, has all its ink
    inside the image and below the plot area (nothing of it is cut off);
  - everything else drawn (title, warning, ticks, labels) is inside the
    image too;
  - the warning, when there is one, lies above the plot area;
  - every average dot shows its series colour in the full rendering (no
    band or other line painted over it), and at least 70 % of the plot
    area stays background (a p50-p99 band must not fill the axis);
  - the x tick labels are whole numbers; no coefficient reads "+ -".

Exits 77 (a skip, for meson) with a message when rsvg-convert is missing
(Debian package librsvg2-bin; scripts/setup installs it).  Standard library
only: the PNG decoder below handles the 8-bit RGB/RGBA images rsvg-convert
writes.  check_latency.py uses check_svg() on the plots of real runs.
"""

import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
import zlib

NS = "http://www.w3.org/2000/svg"
SVG = "{%s}" % NS
MARGIN = 150  # around the image, to see ink that would be cut off

ET.register_namespace("", NS)


class CheckFailed(Exception):
    pass


def check(cond, message):
    if not cond:
        raise CheckFailed(message)


# --- PNG ---------------------------------------------------------------------

def _add_bytes(a, b, mask7, mask8):
    """Byte-wise a + b (mod 256 in every byte) of two big integers."""
    return ((a & mask7) + (b & mask7)) ^ ((a ^ b) & mask8)


class Image:
    """A decoded PNG: width, height, bytes per pixel and one bytes object per
    row."""

    def __init__(self, width, height, bpp, rows):
        self.width, self.height, self.bpp, self.rows = width, height, bpp, rows

    def rgba(self, x, y):
        p = self.rows[y][x * self.bpp:(x + 1) * self.bpp]
        return tuple(p) + ((255,) if self.bpp == 3 else ())


def read_png(path):
    with open(path, "rb") as fh:
        data = fh.read()
    check(data[:8] == b"\x89PNG\r\n\x1a\n", f"{path}: not a PNG")
    pos, idat, header = 8, b"", None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind = data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
    width, height, depth, color, _, _, interlace = header
    check(depth == 8 and color in (2, 6) and interlace == 0,
          f"{path}: unsupported PNG (depth {depth}, color type {color})")
    bpp = 4 if color == 6 else 3
    raw = zlib.decompress(idat)
    stride = width * bpp
    # Whole-row integer arithmetic for the None, Sub and Up filters (almost
    # every row of a plot); a byte loop only for Average and Paeth.
    mask7 = int.from_bytes(b"\x7f" * stride, "little")
    mask8 = int.from_bytes(b"\x80" * stride, "little")
    full = (1 << (8 * stride)) - 1
    rows, prev = [], bytes(stride)
    for y in range(height):
        base = y * (stride + 1)
        kind = raw[base]
        line = raw[base + 1:base + 1 + stride]
        if kind == 1:  # Sub: a prefix sum over pixels, by doubling
            v = int.from_bytes(line, "little")
            shift = 8 * bpp
            while shift < 8 * stride:
                v = _add_bytes(v, (v << shift) & full, mask7, mask8)
                shift *= 2
            line = v.to_bytes(stride, "little")
        elif kind == 2:  # Up
            line = _add_bytes(int.from_bytes(line, "little"),
                              int.from_bytes(prev, "little"), mask7,
                              mask8).to_bytes(stride, "little")
        elif kind in (3, 4):
            out = bytearray(line)
            for i in range(stride):
                a = out[i - bpp] if i >= bpp else 0
                b = prev[i]
                if kind == 3:
                    out[i] = (out[i] + (a + b) // 2) & 0xff
                    continue
                c = prev[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                out[i] = (out[i] + pred) & 0xff
            line = bytes(out)
        rows.append(line)
        prev = line
    return Image(width, height, bpp, rows)


# Maps an alpha byte to 1 when the pixel is visibly painted.
_INKED = bytes(1 if v > 16 else 0 for v in range(256))


def ink_box(img):
    """Bounding box (x0, y0, x1, y1) of the pixels that are not transparent,
    or None."""
    x0 = y0 = x1 = y1 = None
    for y, row in enumerate(img.rows):
        alpha = row[3::4].translate(_INKED) if img.bpp == 4 else b"\x01"
        first = alpha.find(1)
        if first < 0:
            continue
        last = alpha.rfind(1) if img.bpp == 4 else img.width - 1
        x0 = first if x0 is None else min(x0, first)
        x1 = last + 1 if x1 is None else max(x1, last + 1)
        y0 = y if y0 is None else y0
        y1 = y + 1
    return None if x0 is None else (x0, y0, x1, y1)


def render(svg_path, png_path):
    r = subprocess.run(["rsvg-convert", "-o", png_path, svg_path],
                       capture_output=True, text=True, timeout=60)
    check(r.returncode == 0, f"rsvg-convert {svg_path}: {r.stderr}")
    return read_png(png_path)


# --- SVG ---------------------------------------------------------------------

def number(el, name):
    return float(el.get(name))


def plot_area(root):
    """The plot area: <rect id="plot-area">, or the rect of the clip path
    that the data is drawn through."""
    rects = [el for el in root.iter(SVG + "rect")
             if el.get("id") == "plot-area"]
    if not rects:
        rects = list(root.iter(SVG + "clipPath"))[:1]
        rects = [next(c.iter(SVG + "rect")) for c in rects]
    if not rects:
        return None
    el = rects[0]
    x, y = number(el, "x"), number(el, "y")
    return x, y, x + number(el, "width"), y + number(el, "height")


def group(root, name):
    for el in root.iter(SVG + "g"):
        if el.get("id") == name:
            return el
    return None


def ink_of(root, keep, tmp, name):
    """Renders only the top-level children for which keep(el) holds, without
    the background, on a canvas MARGIN wider on every side; returns their ink
    box in the image's own coordinates, or None."""
    w, h = number(root, "width"), number(root, "height")
    copy = ET.fromstring(ET.tostring(root))
    for child in list(copy):
        background = child.get("id") == "background" or (
            child.tag == SVG + "rect" and child.get("width") == "100%")
        if background or not (
                child.tag == SVG + "clipPath" or keep(child)):
            copy.remove(child)
    copy.set("width", str(w + 2 * MARGIN))
    copy.set("height", str(h + 2 * MARGIN))
    copy.set("viewBox", f"{-MARGIN} {-MARGIN} {w + 2 * MARGIN} "
                        f"{h + 2 * MARGIN}")
    path = os.path.join(tmp, name + ".svg")
    ET.ElementTree(copy).write(path, xml_declaration=True, encoding="UTF-8")
    box = ink_box(render(path, os.path.join(tmp, name + ".png")))
    if box is None:
        return None
    return tuple(v - MARGIN for v in box)


def inside(box, w, h):
    return box[0] >= 0 and box[1] >= 0 and box[2] <= w and box[3] <= h


def hex_rgb(color):
    return tuple(int(color[i:i + 2], 16) for i in (1, 3, 5))


def check_svg(svg_path, tmp, expect_warning=None, x_integer=True):
    """Checks one plot; raises CheckFailed listing every problem found.
    expect_warning: True/False/None (don't care)."""
    name = os.path.splitext(os.path.basename(svg_path))[0]
    root = ET.parse(svg_path).getroot()
    check(root.tag == SVG + "svg", f"{name}: root is {root.tag}")
    problems = []

    def want(cond, message):
        if not cond:
            problems.append(message)
        return cond

    w, h = number(root, "width"), number(root, "height")
    img = render(svg_path, os.path.join(tmp, name + ".full.png"))
    want((img.width, img.height) == (round(w), round(h)),
         f"the PNG is {img.width}x{img.height}, the SVG {w}x{h}")
    everything = ink_of(root, lambda el: True, tmp, name + ".all")
    want(everything is not None and inside(everything, w, h),
         f"ink {everything} reaches outside the {w}x{h} image")
    texts = ["".join(t.itertext()) for t in root.iter(SVG + "text")]
    want(not any("+ -" in t for t in texts),
         f"a coefficient reads '+ -': {[t for t in texts if '+ -' in t]}")

    area = plot_area(root)
    check(area is not None, f"{name}: no plot area")
    # Most of the plot area is background, not a band.
    x0, y0, x1, y1 = (round(v) for v in area)
    total = inked = 0
    for y in range(y0 + 2, y1 - 2, 2):
        for x in range(x0 + 2, x1 - 2, 2):
            total += 1
            r, g, b, _ = img.rgba(x, y)
            inked += min(r, g, b) < 200
    want(inked <= 0.3 * total,
         f"{100 * inked / total:.0f} % of the plot area is painted (a band "
         "hides the lines)")

    # The averages stay visible: each dot shows its colour, or the colour
    # of another system's average where the two coincide (zbrokers is drawn
    # on top), never that of a band or a lighter line.
    data = group(root, "data")
    if data is None:  # the group the data is clipped by
        data = next((g for g in root.iter(SVG + "g") if g.get("clip-path")),
                    None)
    dots = list(data.iter(SVG + "circle")) if data is not None else []
    want(dots, "no dots in the data group")
    averages = {hex_rgb(d.get("fill")) for d in dots}
    for dot in dots:
        cx, cy = round(number(dot, "cx")), round(number(dot, "cy"))
        if not (area[0] <= cx < area[2] and area[1] <= cy < area[3]):
            continue  # outside the axis: clipped, the legend says so
        # Some pixel of the dot (radius 3.5) is exactly an average's
        # colour; antialiased edges of a crossing line may tint the others.
        near = [img.rgba(x, y)[:3] for y in range(cy - 2, cy + 3)
                for x in range(cx - 2, cx + 3)]
        want(any(all(abs(a - b) <= 24 for a, b in zip(c, got))
                 for c in averages for got in near),
             f"the dot at {cx},{cy} shows {sorted(set(near))[:4]}, not an "
             f"average's colour {sorted(averages)}: something is painted "
             "over it")

    legend = None
    if want(group(root, "legend") is not None, "no <g id=\"legend\">"):
        legend = ink_of(root, lambda el: el.get("id") == "legend", tmp,
                        name + ".legend")
        if want(legend is not None, "the legend draws nothing"):
            want(inside(legend, w, h),
                 f"legend ink {legend} reaches outside the {w}x{h} image")
            want(legend[1] >= area[3],
                 f"legend ink {legend} overlaps the plot area {area}")

    warning = group(root, "warning")
    if expect_warning is not None:
        want((warning is not None) == expect_warning,
             f"warning {'missing' if expect_warning else 'shown'}")
    if warning is not None:
        text = " ".join("".join(t.itertext()) for t in warning)
        for needle in ("poor fit", "--cpus", "docs/latency.md"):
            want(needle in text, f"the warning lacks {needle!r}: {text}")
        box = ink_of(root, lambda el: el.get("id") == "warning", tmp,
                     name + ".warning")
        want(box is not None and inside(box, w, h) and box[3] <= area[1],
             f"warning ink {box} is not inside the image above the plot "
             f"area {area}")

    ticks = group(root, "x-ticks")
    if ticks is not None:
        labels = ["".join(t.itertext()) for t in ticks]
    else:  # the labels just under the plot area
        labels = ["".join(t.itertext()) for t in root.iter(SVG + "text")
                  if t.get("y") and 0 < float(t.get("y")) - area[3] < 30
                  and t.get("text-anchor") == "middle"]
    if x_integer:
        want(labels and all(re.fullmatch(r"\d+", l) for l in labels),
             f"x tick labels {labels} are not whole numbers")
    if problems:
        raise CheckFailed(f"{name}: " + "; ".join(problems))
    print(f"ok: {name}: legend ink {legend}, all ink {everything}, "
          f"{len(dots)} dots visible, plot {100 * inked / total:.0f} % "
          "painted")


def main():
    if shutil.which("rsvg-convert") is None:
        print("SKIP: rsvg-convert is not installed (Debian package "
              "librsvg2-bin; scripts/setup installs it)", file=sys.stderr)
        return 77
    args = sys.argv[1:]
    try:
        with tempfile.TemporaryDirectory(prefix="zb-latency-svg-") as tmp:
            if len(args) == 2 and args[0] == "--file":
                check_svg(args[1], tmp)
            elif len(args) == 1:
                samples = os.path.join(tmp, "samples")
                os.mkdir(samples)
                r = subprocess.run([args[0], samples], capture_output=True,
                                   text=True, timeout=60)
                check(r.returncode == 0, f"{args[0]}: {r.stderr}")
                # name -> expected warning
                expected = {"clean": False, "noisy": True, "clients": True,
                            "negative": True, "many": False, "pinned": True}
                found = sorted(os.listdir(samples))
                check(found == sorted(n + ".svg" for n in expected),
                      f"samples: {found}")
                for n, warn in sorted(expected.items()):
                    check_svg(os.path.join(samples, n + ".svg"), tmp, warn)
            else:
                print(__doc__, file=sys.stderr)
                return 2
    except CheckFailed as e:
        print(f"FAILED: {e}", file=sys.stderr)
        return 1
    print("passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
