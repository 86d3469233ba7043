// Copyright 2026 The zbrokers Authors.

#include "test/latency/svg_output.h"

#include <algorithm>
#include <cmath>
#include <string_view>

#include "absl/strings/str_format.h"

namespace zb::latency {
namespace {

// Canvas and plot area, in SVG user units (pixels).
constexpr double kWidth = 900, kHeight = 540;
constexpr double kLeft = 80, kRight = 220, kTop = 60, kBottom = 70;
constexpr double kPlotW = kWidth - kLeft - kRight;
constexpr double kPlotH = kHeight - kTop - kBottom;

constexpr std::string_view kZbColor = "#1f5fbf";
constexpr std::string_view kBandColor = "#8fb3ea";
constexpr std::string_view kRawColor = "#d0621a";

// Escapes text for XML character data and attribute values.
std::string Escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

// Maps data coordinates to the plot area.
struct Scale {
  double x_max, y_max;
  double X(double x) const { return kLeft + x / x_max * kPlotW; }
  double Y(double y) const { return kTop + kPlotH - y / y_max * kPlotH; }
};

std::string TickLabel(double v) {
  // Ticks are multiples of 1/2/5 x 10^k: print without trailing zeros.
  return absl::StrFormat("%g", v);
}

void Polyline(std::string* out,
              const std::vector<std::pair<double, double>>& pts,
              const Scale& sc, std::string_view color, double width,
              std::string_view dash) {
  if (pts.empty()) return;
  absl::StrAppendFormat(
      out,
      "<polyline fill=\"none\" stroke=\"%s\" "
      "stroke-width=\"%g\"%s points=\"",
      color, width,
      dash.empty() ? std::string()
                   : absl::StrFormat(" stroke-dasharray=\"%s\"", dash));
  for (const auto& [x, y] : pts) {
    absl::StrAppendFormat(out, "%.1f,%.1f ", sc.X(x), sc.Y(y));
  }
  out->append("\"/>\n");
}

void FitLineSvg(std::string* out, const Series& s, double x_lo, double x_hi,
                const Scale& sc, std::string_view color) {
  if (!s.fit.valid) return;
  auto y = [&](double x) {
    return std::max(0.0, s.fit.intercept + s.fit.slope * x);
  };
  Polyline(out, {{x_lo, y(x_lo)}, {x_hi, y(x_hi)}}, sc, color, 1.5, "6 4");
}

void Legend(std::string* out, int row, std::string_view color,
            std::string_view dash, bool band, std::string_view text) {
  const double x = kLeft + kPlotW + 20;
  const double y = kTop + 10 + row * 22;
  if (band) {
    absl::StrAppendFormat(out,
                          "<rect x=\"%.1f\" y=\"%.1f\" width=\"28\" "
                          "height=\"10\" fill=\"%s\" fill-opacity=\"0.45\"/>\n",
                          x, y - 5, color);
  } else {
    absl::StrAppendFormat(
        out,
        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
        "stroke-width=\"2\"%s/>\n",
        x, y, x + 28, y, color,
        dash.empty() ? std::string()
                     : absl::StrFormat(" stroke-dasharray=\"%s\"", dash));
  }
  absl::StrAppendFormat(out,
                        "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" "
                        "dominant-baseline=\"middle\">%s</text>\n",
                        x + 36, y, Escape(text));
}

}  // namespace

std::vector<double> NiceTicks(double max, int target) {
  if (!(max > 0)) max = 1;
  if (target < 1) target = 1;
  const double raw = max / target;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  }
  std::vector<double> ticks;
  for (int i = 0;; ++i) {
    const double t = i * step;
    ticks.push_back(t);
    if (t >= max * (1 - 1e-9)) break;
  }
  return ticks;
}

std::string ToSvg(const Report& r) {
  const Grow grow = r.options.grow;
  const std::string_view x_name = GrowName(grow);
  const Series& zb = r.zbrokers;
  const Series* raw = r.raw ? &*r.raw : nullptr;

  // Axis ranges: x from 0 to the largest step, y from 0 to the largest p99
  // (the band's top) or average.
  double x_hi = 1, y_lines = 1, y_band = 0;
  double x_lo = 1e300;
  auto extend = [&](const Series& s) {
    for (const StepResult& st : s.steps) {
      x_hi = std::max(x_hi, static_cast<double>(st.X(grow)));
      x_lo = std::min(x_lo, static_cast<double>(st.X(grow)));
      y_lines = std::max({y_lines, st.latency.avg_us, st.latency.p50_us});
      y_band = std::max(y_band, st.latency.p99_us);
    }
  };
  extend(zb);
  if (raw) extend(*raw);
  if (x_lo > x_hi) x_lo = 1;
  // The y axis shows the whole band unless its p99 top is far above the
  // lines (a busy machine's p99 can be 10x the average): then the band is
  // clipped at 3x the highest line, so that the lines stay readable, and
  // the legend says so.
  const bool clipped = y_band > 3 * y_lines;
  const double y_hi = clipped ? 3 * y_lines : std::max(y_lines, y_band);
  const std::vector<double> xt = NiceTicks(x_hi, 10);
  const std::vector<double> yt = NiceTicks(y_hi * 1.05, 8);
  const Scale sc{xt.back(), yt.back()};

  std::string out;
  absl::StrAppendFormat(
      &out,
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%g\" height=\"%g\" "
      "viewBox=\"0 0 %g %g\" font-family=\"sans-serif\">\n"
      "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
      kWidth, kHeight, kWidth, kHeight);
  const std::string title = absl::StrFormat(
      "%s consensus round-trip latency (%s, %s, %d round trips per step)",
      zb.name, TransportName(r.options.transport),
      PlacementName(r.options.placement), r.options.rounds_per_step);
  absl::StrAppendFormat(&out,
                        "<text x=\"%g\" y=\"30\" font-size=\"16\" "
                        "text-anchor=\"middle\">%s</text>\n",
                        kLeft + kPlotW / 2, Escape(title));

  // Grid and tick labels.
  out += "<g stroke=\"#e4e4e4\" stroke-width=\"1\">\n";
  for (double t : yt) {
    absl::StrAppendFormat(
        &out, "<line x1=\"%g\" y1=\"%.1f\" x2=\"%g\" y2=\"%.1f\"/>\n", kLeft,
        sc.Y(t), kLeft + kPlotW, sc.Y(t));
  }
  for (double t : xt) {
    absl::StrAppendFormat(
        &out, "<line x1=\"%.1f\" y1=\"%g\" x2=\"%.1f\" y2=\"%g\"/>\n", sc.X(t),
        kTop, sc.X(t), kTop + kPlotH);
  }
  out += "</g>\n<g font-size=\"12\" fill=\"#333\">\n";
  for (double t : yt) {
    absl::StrAppendFormat(&out,
                          "<text x=\"%g\" y=\"%.1f\" text-anchor=\"end\" "
                          "dominant-baseline=\"middle\">%s</text>\n",
                          kLeft - 8, sc.Y(t), TickLabel(t));
  }
  for (double t : xt) {
    absl::StrAppendFormat(&out,
                          "<text x=\"%.1f\" y=\"%g\" "
                          "text-anchor=\"middle\">%s</text>\n",
                          sc.X(t), kTop + kPlotH + 18, TickLabel(t));
  }
  out += "</g>\n";
  // Axes and their labels.
  absl::StrAppendFormat(&out,
                        "<g stroke=\"#333\" stroke-width=\"1.2\">"
                        "<line x1=\"%g\" y1=\"%g\" x2=\"%g\" y2=\"%g\"/>"
                        "<line x1=\"%g\" y1=\"%g\" x2=\"%g\" y2=\"%g\"/></g>\n",
                        kLeft, kTop + kPlotH, kLeft + kPlotW, kTop + kPlotH,
                        kLeft, kTop, kLeft, kTop + kPlotH);
  absl::StrAppendFormat(&out,
                        "<text x=\"%g\" y=\"%g\" font-size=\"14\" "
                        "text-anchor=\"middle\">%s</text>\n",
                        kLeft + kPlotW / 2, kHeight - 20, Escape(x_name));
  absl::StrAppendFormat(
      &out,
      "<text x=\"22\" y=\"%g\" font-size=\"14\" text-anchor=\"middle\" "
      "transform=\"rotate(-90 22 %g)\">round-trip latency (\xC2\xB5s)</text>\n",
      kTop + kPlotH / 2, kTop + kPlotH / 2);

  // Everything drawn from data stays inside the plot area.
  absl::StrAppendFormat(&out,
                        "<clipPath id=\"plot\"><rect x=\"%g\" y=\"%g\" "
                        "width=\"%g\" height=\"%g\"/></clipPath>\n"
                        "<g clip-path=\"url(#plot)\">\n",
                        kLeft, kTop, kPlotW, kPlotH);
  // p50-p99 band: along p99 forwards, back along p50.
  if (!zb.steps.empty()) {
    out += absl::StrFormat(
        "<polygon fill=\"%s\" fill-opacity=\"0.45\" "
        "stroke=\"none\" points=\"",
        kBandColor);
    for (const StepResult& st : zb.steps) {
      absl::StrAppendFormat(&out, "%.1f,%.1f ", sc.X(st.X(grow)),
                            sc.Y(st.latency.p99_us));
    }
    for (auto it = zb.steps.rbegin(); it != zb.steps.rend(); ++it) {
      absl::StrAppendFormat(&out, "%.1f,%.1f ", sc.X(it->X(grow)),
                            sc.Y(it->latency.p50_us));
    }
    out += "\"/>\n";
  }

  auto series_line = [&](const Series& s, std::string_view color) {
    std::vector<std::pair<double, double>> pts;
    for (const StepResult& st : s.steps) {
      pts.emplace_back(st.X(grow), st.latency.avg_us);
    }
    Polyline(&out, pts, sc, color, 2, "");
    for (const auto& [x, y] : pts) {
      absl::StrAppendFormat(&out,
                            "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" "
                            "fill=\"%s\"/>\n",
                            sc.X(x), sc.Y(y), color);
    }
    FitLineSvg(&out, s, x_lo, x_hi, sc, color);
  };
  if (raw) series_line(*raw, kRawColor);
  series_line(zb, kZbColor);
  out += "</g>\n";

  // Legend.
  int row = 0;
  Legend(&out, row++, kZbColor, "", false, zb.name + " average");
  Legend(&out, row++, kBandColor, "", true,
         zb.name + (clipped ? " p50 to p99 (clipped)" : " p50 to p99"));
  if (zb.fit.valid) {
    Legend(&out, row++, kZbColor, "6 4", false,
           absl::StrFormat("fit %.1f + %.2f x (r\xC2\xB2 %.3f)",
                           zb.fit.intercept, zb.fit.slope, zb.fit.r2));
  }
  if (raw) {
    Legend(&out, row++, kRawColor, "", false, "raw libzmq average");
    if (raw->fit.valid) {
      Legend(&out, row++, kRawColor, "6 4", false,
             absl::StrFormat("fit %.1f + %.2f x (r\xC2\xB2 %.3f)",
                             raw->fit.intercept, raw->fit.slope, raw->fit.r2));
    }
  }
  out += "</svg>\n";
  return out;
}

}  // namespace zb::latency
