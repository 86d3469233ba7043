// Copyright 2026 The zbrokers Authors.

#include "tools/latency/svg_output.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace zb::latency {
namespace {

// Layout, in SVG user units (pixels).  The height is computed from what is
// shown (warning lines, legend rows).
constexpr double kWidth = 960;
constexpr double kLeft = 90, kRight = 30;
constexpr double kPlotW = kWidth - kLeft - kRight;
constexpr double kPlotH = 380;
constexpr double kTitleY = 30, kSubtitleY = 50;
constexpr double kWarningTop = 74, kWarningLine = 17, kWarningFont = 13;
constexpr double kLegendRow = 20, kLegendFont = 12, kSwatch = 28;
// How far above its lines a p99 may reach before the axis stops following
// it (it is then cut at the top of the plot).
constexpr double kP99Reach = 2.0;

constexpr std::string_view kR2 = "r\xC2\xB2";  // r squared
// A no-break space, so that "--cpus 0" is never split across lines.
constexpr std::string_view kNbsp = "\xC2\xA0";

struct Style {
  std::string_view color;
  std::string_view label;  // in the legend
};
constexpr Style kZbStyle{"#1f5fbf", ""};
constexpr Style kRawStyle{"#d0621a", "raw libzmq"};

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
  double top;  // y of the plot area's top edge
  double x_max, y_max;
  double X(double x) const { return kLeft + x / x_max * kPlotW; }
  double Y(double y) const { return top + kPlotH - y / y_max * kPlotH; }
};

std::string TickLabel(double v) {
  // Ticks are multiples of 1/2/5 x 10^k: whole numbers without a fraction
  // or an exponent, others without trailing zeros.
  if (v == std::floor(v) && std::abs(v) < 1e15) {
    return absl::StrFormat("%.0f", v);
  }
  return absl::StrFormat("%g", v);
}

std::string Dash(std::string_view dash) {
  return dash.empty() ? std::string()
                      : absl::StrFormat(" stroke-dasharray=\"%s\"", dash);
}

void Polyline(std::string* out,
              const std::vector<std::pair<double, double>>& pts,
              const Scale& sc, std::string_view color, double width,
              std::string_view dash, double opacity = 1) {
  if (pts.empty()) return;
  absl::StrAppendFormat(out,
                        "<polyline fill=\"none\" stroke=\"%s\" "
                        "stroke-width=\"%g\"%s%s points=\"",
                        color, width, Dash(dash),
                        opacity < 1
                            ? absl::StrFormat(" stroke-opacity=\"%g\"", opacity)
                            : std::string());
  for (const auto& [x, y] : pts) {
    absl::StrAppendFormat(out, "%.1f,%.1f ", sc.X(x), sc.Y(y));
  }
  out->append("\"/>\n");
}

// Line styles: the legend draws the same strokes.
struct Stroke {
  double width;
  std::string_view dash;
  double opacity;
};
constexpr Stroke kAvgStroke{2.5, "", 1};
constexpr Stroke kP50Stroke{1.4, "", 0.85};
constexpr Stroke kP99Stroke{1.2, "1.5 3", 0.7};
constexpr Stroke kFitStroke{1.5, "7 4", 1};
constexpr Stroke kFitP50Stroke{1.5, "9 3 2 3", 1};

std::string FitText(std::string_view what, const LinearFit& f) {
  return absl::StrFormat("fit (%s): %s, %s %.3f", what,
                         FormatLine(f.intercept, f.slope, 1, 2, "", " x"), kR2,
                         f.r2);
}

// Splits `text` at spaces into lines no wider than `width` (estimated).
std::vector<std::string> Wrap(std::string_view text, double font_size,
                              double width) {
  std::vector<std::string> lines;
  std::string line;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find(' ', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view word = text.substr(start, end - start);
    const std::string candidate =
        line.empty() ? std::string(word) : line + " " + std::string(word);
    if (!line.empty() && TextWidth(candidate, font_size) > width) {
      lines.push_back(line);
      line = std::string(word);
    } else {
      line = candidate;
    }
    start = end + 1;
  }
  if (!line.empty()) lines.push_back(line);
  return lines;
}

// One entry of the legend: a stroke (or a dot) and a label.
struct LegendItem {
  std::string_view color;
  Stroke stroke;
  bool dot;
  std::string text;
};

}  // namespace

double TextWidth(std::string_view text, double font_size) {
  // Sans-serif glyphs average well under 0.6 em; 0.62 em per character
  // (UTF-8 continuation bytes not counted) leaves a margin for wide ones.
  std::size_t chars = 0;
  for (char c : text) chars += (static_cast<unsigned char>(c) & 0xc0) != 0x80;
  return static_cast<double>(chars) * 0.62 * font_size;
}

std::vector<double> NiceTicks(double max, int target, bool integer) {
  if (!(max > 0)) max = 1;
  if (target < 1) target = 1;
  const double raw = max / target;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * mag >= raw * (1 - 1e-9)) {
      step = m * mag;
      break;
    }
  }
  // A count axis never gets fractional ticks; 1, 2, 5, 10, ... stay nice.
  if (integer) step = std::max(1.0, std::round(step));
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
  std::vector<std::pair<const Series*, Style>> series;
  // The control run's second series is named for what it is ("raw-b"),
  // not "raw libzmq" next to a first series that is raw libzmq too.
  if (r.raw) {
    series.emplace_back(&*r.raw, r.options.IsControl()
                                     ? Style{kRawStyle.color, ""}
                                     : kRawStyle);
  }
  series.emplace_back(&r.zbrokers, kZbStyle);

  // Axis ranges: x from 0 to the largest step; y from 0 to the highest
  // average, median or fitted value, or to the highest p99 when that is
  // not far above them.
  double x_lo = 1e300, x_hi = 1, y_lines = 0, y_p99 = 0;
  for (const auto& [s, style] : series) {
    for (const StepResult& st : s->steps) {
      const double x = st.X(grow);
      x_lo = std::min(x_lo, x);
      x_hi = std::max(x_hi, x);
      y_lines = std::max({y_lines, st.latency.avg_us, st.latency.p50_us});
      y_p99 = std::max(y_p99, st.latency.p99_us);
    }
  }
  if (x_lo > x_hi) x_lo = 1;
  for (const auto& [s, style] : series) {
    for (const LinearFit* f : {&s->fit, &s->fit_p50}) {
      if (!f->valid) continue;
      for (double x : {x_lo, x_hi}) {
        y_lines = std::max(y_lines, f->intercept + f->slope * x);
      }
    }
  }
  if (!(y_lines > 0)) y_lines = 1;
  const bool p99_cut = y_p99 > kP99Reach * y_lines;
  const double y_top = p99_cut ? y_lines : std::max(y_lines, y_p99);
  const std::vector<double> xt = NiceTicks(x_hi, 10, /*integer=*/true);
  const std::vector<double> yt = NiceTicks(y_top * 1.05, 8);

  // The warning block under the title.
  std::vector<std::string> warning;
  const std::vector<PoorFit> poor = PoorFits(r);
  if (!poor.empty()) {
    std::vector<std::string> what;
    for (const PoorFit& p : poor) what.push_back(p.Describe(kR2));
    const double width = kWidth - 40;
    for (const std::string& l :
         Wrap(absl::StrFormat("Warning: poor fit, the cost per added %s is "
                              "not reliable: %s.",
                              grow == Grow::kWorkers ? "worker" : "client",
                              absl::StrJoin(what, "; ")),
              kWarningFont, width)) {
      warning.push_back(l);
    }
    const std::string hint =
        r.options.cpus.empty()
            ? absl::StrFormat(
                  "Not pinned: on a VM with several cores cross-core "
                  "wake-ups decide most round trips; rerun with --cpus%s0 or "
                  "--cpus%s0-1 (docs/latency.md, \"Noisy fits and --cpus\").",
                  kNbsp, kNbsp)
            : "Pinned: other load on the machine is the likely cause; rerun "
              "when it is quiet (docs/latency.md, \"Noisy fits and "
              "--cpus\").";
    for (const std::string& l : Wrap(hint, kWarningFont, width)) {
      warning.push_back(l);
    }
  }
  const double plot_top =
      warning.empty() ? 70 : kWarningTop + warning.size() * kWarningLine + 20;
  const Scale sc{plot_top, xt.back(), yt.back()};

  // The legend: one column per system, below the x axis.
  std::vector<std::vector<LegendItem>> columns;
  for (auto it = series.rbegin(); it != series.rend(); ++it) {
    const Series& s = *it->first;
    const Style& style = it->second;
    const std::string name =
        style.label.empty() ? s.name : std::string(style.label);
    std::vector<LegendItem> col;
    col.push_back({style.color, kAvgStroke, true, name + " average"});
    col.push_back({style.color, kP50Stroke, false, name + " median (p50)"});
    double p99_max = 0;
    for (const StepResult& st : s.steps) {
      p99_max = std::max(p99_max, st.latency.p99_us);
    }
    col.push_back(
        {style.color, kP99Stroke, false,
         name +
             (p99_max > yt.back()
                  ? absl::StrFormat(" p99 (up to %.0f \xC2\xB5s, cut)", p99_max)
                  : std::string(" p99"))});
    if (s.fit.valid) {
      col.push_back({style.color, kFitStroke, false, FitText("avg", s.fit)});
    }
    if (s.fit_p50.valid) {
      col.push_back(
          {style.color, kFitP50Stroke, false, FitText("p50", s.fit_p50)});
    }
    columns.push_back(std::move(col));
  }
  std::size_t rows = 0;
  double widest = 0;
  for (const auto& col : columns) {
    rows = std::max(rows, col.size());
    for (const LegendItem& item : col) {
      widest = std::max(widest, TextWidth(item.text, kLegendFont));
    }
  }
  const double legend_top = plot_top + kPlotH + 60;
  const double column_w = kPlotW / static_cast<double>(columns.size());
  // Too wide for its column (never at today's texts): the font shrinks so
  // that the legend still fits the image.
  const double legend_font =
      std::min(kLegendFont, kLegendFont * (column_w - kSwatch - 24) / widest);
  const double legend_h = static_cast<double>(rows) * kLegendRow + 12;
  const double height = legend_top + legend_h + 16;

  std::string out;
  absl::StrAppendFormat(
      &out,
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%g\" height=\"%g\" "
      "viewBox=\"0 0 %g %g\" font-family=\"sans-serif\">\n"
      "<rect id=\"background\" width=\"100%%\" height=\"100%%\" "
      "fill=\"white\"/>\n",
      kWidth, height, kWidth, height);
  const std::string title = absl::StrFormat(
      "%s consensus round-trip latency by %s", r.zbrokers.name, x_name);
  absl::StrAppendFormat(&out,
                        "<text x=\"%g\" y=\"%g\" font-size=\"16\" "
                        "text-anchor=\"middle\">%s</text>\n",
                        kWidth / 2, kTitleY, Escape(title));
  const std::string subtitle = absl::StrFormat(
      "%s, %s, %d round trips per step, %s", TransportName(r.options.transport),
      PlacementName(r.options.placement), r.options.rounds_per_step,
      r.options.cpus.empty() ? std::string("not pinned")
                             : absl::StrFormat("pinned to cpus %s",
                                               FormatCpuList(r.options.cpus)));
  absl::StrAppendFormat(&out,
                        "<text x=\"%g\" y=\"%g\" font-size=\"12\" "
                        "fill=\"#555\" text-anchor=\"middle\">%s</text>\n",
                        kWidth / 2, kSubtitleY, Escape(subtitle));
  if (!warning.empty()) {
    absl::StrAppendFormat(&out,
                          "<g id=\"warning\" font-size=\"%g\" fill=\"#c00000\" "
                          "font-weight=\"bold\">\n",
                          kWarningFont);
    for (std::size_t i = 0; i < warning.size(); ++i) {
      absl::StrAppendFormat(&out, "<text x=\"20\" y=\"%g\">%s</text>\n",
                            kWarningTop + i * kWarningLine + kWarningFont,
                            Escape(warning[i]));
    }
    out += "</g>\n";
  }

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
        plot_top, sc.X(t), plot_top + kPlotH);
  }
  out += "</g>\n<g id=\"y-ticks\" font-size=\"12\" fill=\"#333\">\n";
  for (double t : yt) {
    absl::StrAppendFormat(&out,
                          "<text x=\"%g\" y=\"%.1f\" text-anchor=\"end\" "
                          "dominant-baseline=\"middle\">%s</text>\n",
                          kLeft - 8, sc.Y(t), TickLabel(t));
  }
  out += "</g>\n<g id=\"x-ticks\" font-size=\"12\" fill=\"#333\">\n";
  for (double t : xt) {
    absl::StrAppendFormat(&out,
                          "<text x=\"%.1f\" y=\"%g\" "
                          "text-anchor=\"middle\">%s</text>\n",
                          sc.X(t), plot_top + kPlotH + 18, TickLabel(t));
  }
  out += "</g>\n";
  // Axes and their labels.
  absl::StrAppendFormat(&out,
                        "<rect id=\"plot-area\" x=\"%g\" y=\"%g\" width=\"%g\" "
                        "height=\"%g\" fill=\"none\" stroke=\"#333\" "
                        "stroke-width=\"1.2\"/>\n",
                        kLeft, plot_top, kPlotW, kPlotH);
  absl::StrAppendFormat(&out,
                        "<text x=\"%g\" y=\"%g\" font-size=\"14\" "
                        "text-anchor=\"middle\">%s</text>\n",
                        kLeft + kPlotW / 2, plot_top + kPlotH + 40,
                        Escape(x_name));
  absl::StrAppendFormat(
      &out,
      "<text x=\"24\" y=\"%g\" font-size=\"14\" text-anchor=\"middle\" "
      "transform=\"rotate(-90 24 %g)\">round-trip latency (\xC2\xB5s)</text>\n",
      plot_top + kPlotH / 2, plot_top + kPlotH / 2);

  // Everything drawn from data stays inside the plot area (with a margin
  // for the dots of the first and last steps).  Drawn in this order so that
  // nothing covers the averages: p99s, fits, medians, averages (zbrokers
  // last, on top).
  constexpr double kClipMargin = 5;
  absl::StrAppendFormat(&out,
                        "<clipPath id=\"plot\"><rect x=\"%g\" y=\"%g\" "
                        "width=\"%g\" height=\"%g\"/></clipPath>\n"
                        "<g id=\"data\" clip-path=\"url(#plot)\">\n",
                        kLeft - kClipMargin, plot_top - kClipMargin,
                        kPlotW + 2 * kClipMargin, kPlotH + 2 * kClipMargin);
  auto points = [&](const Series& s, double LatencySummary::*field) {
    std::vector<std::pair<double, double>> pts;
    for (const StepResult& st : s.steps) {
      if (st.latency.count > 0) pts.emplace_back(st.X(grow), st.latency.*field);
    }
    return pts;
  };
  auto draw = [&](const std::vector<std::pair<double, double>>& pts,
                  std::string_view color, const Stroke& k) {
    Polyline(&out, pts, sc, color, k.width, k.dash, k.opacity);
  };
  for (const auto& [s, style] : series) {
    draw(points(*s, &LatencySummary::p99_us), style.color, kP99Stroke);
  }
  for (const auto& [s, style] : series) {
    if (s->fit.valid) {
      draw({{x_lo, s->fit.intercept + s->fit.slope * x_lo},
            {x_hi, s->fit.intercept + s->fit.slope * x_hi}},
           style.color, kFitStroke);
    }
    if (s->fit_p50.valid) {
      draw({{x_lo, s->fit_p50.intercept + s->fit_p50.slope * x_lo},
            {x_hi, s->fit_p50.intercept + s->fit_p50.slope * x_hi}},
           style.color, kFitP50Stroke);
    }
  }
  for (const auto& [s, style] : series) {
    draw(points(*s, &LatencySummary::p50_us), style.color, kP50Stroke);
  }
  for (const auto& [s, style] : series) {
    const auto pts = points(*s, &LatencySummary::avg_us);
    draw(pts, style.color, kAvgStroke);
    for (const auto& [x, y] : pts) {
      absl::StrAppendFormat(&out,
                            "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" "
                            "fill=\"%s\"/>\n",
                            sc.X(x), sc.Y(y), style.color);
    }
  }
  out += "</g>\n";

  // Legend.
  absl::StrAppendFormat(&out,
                        "<g id=\"legend\" font-size=\"%.2f\">\n"
                        "<rect x=\"%g\" y=\"%g\" width=\"%g\" height=\"%g\" "
                        "fill=\"none\" stroke=\"#ccc\"/>\n",
                        legend_font, kLeft, legend_top, kPlotW, legend_h);
  for (std::size_t c = 0; c < columns.size(); ++c) {
    const double x = kLeft + 12 + static_cast<double>(c) * column_w;
    for (std::size_t i = 0; i < columns[c].size(); ++i) {
      const LegendItem& item = columns[c][i];
      const double y = legend_top + 16 + static_cast<double>(i) * kLegendRow;
      absl::StrAppendFormat(
          &out,
          "<line x1=\"%g\" y1=\"%g\" x2=\"%g\" y2=\"%g\" stroke=\"%s\" "
          "stroke-width=\"%g\"%s%s/>\n",
          x, y, x + kSwatch, y, item.color, item.stroke.width,
          Dash(item.stroke.dash),
          item.stroke.opacity < 1
              ? absl::StrFormat(" stroke-opacity=\"%g\"", item.stroke.opacity)
              : std::string());
      if (item.dot) {
        absl::StrAppendFormat(
            &out, "<circle cx=\"%g\" cy=\"%g\" r=\"3.5\" fill=\"%s\"/>\n",
            x + kSwatch / 2, y, item.color);
      }
      absl::StrAppendFormat(&out,
                            "<text x=\"%g\" y=\"%g\" "
                            "dominant-baseline=\"middle\">%s</text>\n",
                            x + kSwatch + 8, y, Escape(item.text));
    }
  }
  out += "</g>\n</svg>\n";
  return out;
}

}  // namespace zb::latency
