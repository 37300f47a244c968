//! The charts, as inline SVG text: bars, a scatter with error bars, intervals and a
//! timeline. Each `<svg>` has a `data-chart` name and a `<title>`, and draws every mark as
//! an element of class `mark`, so a reader (or a test) can tell an empty chart.

use std::fmt::Write;

use crate::html::escape;

/// One horizontal bar: a label, a signed length, and the text printed beside it.
pub struct Bar {
    pub label: String,
    pub value: f64,
    pub text: String,
    /// Drawn in the interaction colour.
    pub interaction: bool,
}

const LABEL_WIDTH: f64 = 260.0;
const BAR_HEIGHT: f64 = 22.0;

/// Horizontal bars, longest first as given; bars of negative values go left of the axis.
pub fn bars(name: &str, title: &str, items: &[Bar], width: f64) -> String {
    let height = BAR_HEIGHT * items.len() as f64 + 10.0;
    let largest = items.iter().map(|b| b.value.abs()).fold(0.0, f64::max);
    let any_negative = items.iter().any(|b| b.value < 0.0);
    let text_room = 180.0;
    let plot = width - LABEL_WIDTH - text_room;
    // With negative bars, the axis sits in the middle of the plot.
    let (axis, half) = if any_negative {
        (LABEL_WIDTH + plot / 2.0, plot / 2.0)
    } else {
        (LABEL_WIDTH, plot)
    };
    let mut out = open(name, title, width, height);
    for (i, b) in items.iter().enumerate() {
        let y = 5.0 + BAR_HEIGHT * i as f64;
        let length = if largest > 0.0 {
            (b.value.abs() / largest * half).max(1.0)
        } else {
            1.0
        };
        let x = if b.value < 0.0 { axis - length } else { axis };
        let class = match (b.interaction, b.value < 0.0) {
            (true, _) => "mark interaction",
            (false, true) => "mark faster",
            (false, false) => "mark slower",
        };
        let _ = write!(
            out,
            r#"<text class="label" x="{:.1}" y="{:.1}" text-anchor="end">{}</text><rect class="{class}" x="{x:.1}" y="{:.1}" width="{length:.1}" height="{:.1}"><title>{}: {}</title></rect>"#,
            LABEL_WIDTH - 6.0,
            y + 15.0,
            escape(&b.label),
            y + 3.0,
            BAR_HEIGHT - 6.0,
            escape(&b.label),
            escape(&b.text),
        );
        let (tx, anchor) = if b.value < 0.0 && !any_negative {
            (x - 4.0, "end")
        } else if b.value < 0.0 {
            (axis + 4.0, "start")
        } else {
            (x + length + 4.0, "start")
        };
        let _ = write!(
            out,
            r#"<text class="value" x="{tx:.1}" y="{:.1}" text-anchor="{anchor}">{}</text>"#,
            y + 15.0,
            escape(&b.text)
        );
    }
    let _ = write!(
        out,
        r#"<line class="axis" x1="{axis:.1}" y1="0" x2="{axis:.1}" y2="{height:.1}"/></svg>"#
    );
    out
}

/// A point of a scatter: x and y, an error bar's half-width along x, a hover text.
pub struct Point {
    pub x: f64,
    pub y: f64,
    pub x_error: f64,
    /// Drawn hollow (e.g. a training configuration).
    pub hollow: bool,
    pub text: String,
}

/// Predicted against measured: points with horizontal error bars and the diagonal y = x.
pub fn scatter(name: &str, title: &str, points: &[Point], axes: (&str, &str)) -> String {
    let (width, height, margin) = (520.0, 420.0, 56.0);
    let finite = |v: f64| v.is_finite().then_some(v);
    let high = points
        .iter()
        .flat_map(|p| [p.y, p.x + finite(p.x_error).unwrap_or(0.0)])
        .fold(0.0, f64::max);
    // Error bars below the smallest point are cut at the axis rather than moving it.
    let low = points
        .iter()
        .flat_map(|p| [p.y, p.x])
        .fold(f64::INFINITY, f64::min)
        .min(0.0);
    let (low, high, step) = nice_range(low, high.max(low + 1e-12));
    let sx = |v: f64| margin + (v.max(low) - low) / (high - low) * (width - 1.5 * margin);
    let sy = |v: f64| height - margin - (v - low) / (high - low) * (height - 1.5 * margin);
    let mut out = open(name, title, width, height);
    axes_with_ticks(
        &mut out,
        (low, high, step),
        &sx,
        &sy,
        (width, height, margin),
    );
    let _ = write!(
        out,
        r#"<line class="diagonal" x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}"/>"#,
        sx(low),
        sy(low),
        sx(high),
        sy(high)
    );
    for p in points {
        if let Some(e) = finite(p.x_error) {
            let _ = write!(
                out,
                r#"<line class="error" x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}"/>"#,
                sx(p.x - e),
                sy(p.y),
                sx(p.x + e),
                sy(p.y)
            );
        }
        let _ = write!(
            out,
            r#"<circle class="mark{}" cx="{:.1}" cy="{:.1}" r="4"><title>{}</title></circle>"#,
            if p.hollow { " hollow" } else { "" },
            sx(p.x),
            sy(p.y),
            escape(&p.text)
        );
    }
    axis_labels(&mut out, axes, (width, height, margin));
    out.push_str("</svg>");
    out
}

/// One row of an interval chart: a label, a centre and the interval around it.
pub struct Interval {
    pub label: String,
    pub centre: f64,
    pub low: f64,
    pub high: f64,
    pub text: String,
}

/// Each row's centre as a dot with its interval as a line, on one shared axis.
pub fn intervals(name: &str, title: &str, rows: &[Interval], width: f64) -> String {
    let row = 16.0;
    let height = row * rows.len() as f64 + 40.0;
    let high = rows
        .iter()
        .map(|r| if r.high.is_finite() { r.high } else { r.centre })
        .fold(0.0, f64::max);
    let (low, high, step) = nice_range(0.0, high.max(1e-12));
    let plot = width - LABEL_WIDTH - 20.0;
    let sx = |v: f64| LABEL_WIDTH + (v.clamp(low, high) - low) / (high - low) * plot;
    let mut out = open(name, title, width, height);
    for (i, r) in rows.iter().enumerate() {
        let y = 10.0 + row * i as f64 + row / 2.0;
        let _ = write!(
            out,
            r#"<text class="label small" x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#,
            LABEL_WIDTH - 6.0,
            y + 4.0,
            escape(&r.label)
        );
        if r.low.is_finite() && r.high.is_finite() {
            let _ = write!(
                out,
                r#"<line class="error" x1="{:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}"/>"#,
                sx(r.low),
                sx(r.high)
            );
        }
        let _ = write!(
            out,
            r#"<circle class="mark" cx="{:.1}" cy="{y:.1}" r="3.5"><title>{}: {}</title></circle>"#,
            sx(r.centre),
            escape(&r.label),
            escape(&r.text)
        );
    }
    let base = height - 24.0;
    let mut tick = low;
    while tick <= high + step / 2.0 {
        let _ = write!(
            out,
            r#"<line class="grid" x1="{x:.1}" y1="4" x2="{x:.1}" y2="{base:.1}"/><text class="tick" x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            base + 14.0,
            tick_text(tick, step),
            x = sx(tick)
        );
        tick += step;
    }
    out.push_str("</svg>");
    out
}

/// Several series over the same sequence of points in time (commits): one polyline each.
pub fn timeline(
    name: &str,
    title: &str,
    steps: &[String],
    series: &[(String, Vec<Option<f64>>)],
) -> String {
    let (width, height, margin) = (760.0, 320.0, 56.0);
    let high = series
        .iter()
        .flat_map(|(_, v)| v.iter().flatten().copied())
        .fold(0.0, f64::max);
    let (low, high, step) = nice_range(0.0, high.max(1e-12));
    let n = steps.len().max(2) as f64 - 1.0;
    let sx = |i: usize| margin + i as f64 / n * (width - 1.5 * margin);
    let sy = |v: f64| height - margin - (v - low) / (high - low) * (height - 1.5 * margin);
    let mut out = open(name, title, width, height);
    let mut tick = low;
    while tick <= high + step / 2.0 {
        let _ = write!(
            out,
            r#"<line class="grid" x1="{margin}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}"/><text class="tick" x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#,
            width - margin / 2.0,
            margin - 4.0,
            sy(tick) + 4.0,
            tick_text(tick, step),
            y = sy(tick)
        );
        tick += step;
    }
    for (i, s) in steps.iter().enumerate() {
        let _ = write!(
            out,
            r#"<text class="tick" x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            sx(i),
            height - margin + 16.0,
            escape(s)
        );
    }
    for (k, (label, values)) in series.iter().enumerate() {
        let points: Vec<String> = values
            .iter()
            .enumerate()
            .filter_map(|(i, v)| v.map(|v| format!("{:.1},{:.1}", sx(i), sy(v))))
            .collect();
        let _ = write!(
            out,
            r#"<polyline class="mark series s{}" points="{}"><title>{}</title></polyline>"#,
            k % 6,
            points.join(" "),
            escape(label)
        );
    }
    out.push_str("</svg>");
    out
}

fn open(name: &str, title: &str, width: f64, height: f64) -> String {
    format!(
        r#"<svg class="chart" data-chart="{}" role="img" viewBox="0 0 {width:.0} {height:.0}" width="{width:.0}" height="{height:.0}"><title>{}</title>"#,
        escape(name),
        escape(title)
    )
}

fn axes_with_ticks(
    out: &mut String,
    (low, high, step): (f64, f64, f64),
    sx: &dyn Fn(f64) -> f64,
    sy: &dyn Fn(f64) -> f64,
    (width, height, margin): (f64, f64, f64),
) {
    let mut tick = low;
    while tick <= high + step / 2.0 {
        let _ = write!(
            out,
            r#"<line class="grid" x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}"/><text class="tick" x="{:.1}" y="{:.1}" text-anchor="middle">{t}</text><line class="grid" x1="{margin:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}"/><text class="tick" x="{:.1}" y="{:.1}" text-anchor="end">{t}</text>"#,
            sx(tick),
            sy(high),
            sx(tick),
            height - margin,
            sx(tick),
            height - margin + 16.0,
            sy(tick),
            width - margin / 2.0,
            sy(tick),
            margin - 4.0,
            sy(tick) + 4.0,
            t = tick_text(tick, step)
        );
        tick += step;
    }
}

fn axis_labels(out: &mut String, (x, y): (&str, &str), (width, height, margin): (f64, f64, f64)) {
    let _ = write!(
        out,
        r#"<text class="axis-label" x="{:.1}" y="{:.1}" text-anchor="middle">{}</text><text class="axis-label" transform="translate(14 {:.1}) rotate(-90)" text-anchor="middle">{}</text>"#,
        (width + margin / 2.0) / 2.0,
        height - 12.0,
        escape(x),
        (height - margin / 2.0) / 2.0,
        escape(y)
    );
}

/// A range holding [low, high] with round ends and a round step (about five ticks).
pub fn nice_range(low: f64, high: f64) -> (f64, f64, f64) {
    let raw = (high - low) / 5.0;
    let magnitude = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .into_iter()
        .map(|m| m * magnitude)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * magnitude);
    (
        (low / step).floor() * step,
        (high / step).ceil() * step,
        step,
    )
}

fn tick_text(value: f64, step: f64) -> String {
    let decimals = (-step.log10().floor()).max(0.0) as usize + 1;
    let text = format!("{value:.decimals$}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    if text == "-0" {
        "0".into()
    } else {
        text.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_round() {
        assert_eq!(nice_range(0.0, 0.93), (0.0, 1.0, 0.2));
        assert_eq!(nice_range(0.0, 42.0), (0.0, 50.0, 10.0));
        assert_eq!(tick_text(0.30000000000000004, 0.1), "0.3");
        assert_eq!(tick_text(20.0, 10.0), "20");
    }

    #[test]
    fn every_bar_is_a_mark() {
        let items = [
            Bar {
                label: "A".into(),
                value: 2.0,
                text: "2 s".into(),
                interaction: false,
            },
            Bar {
                label: "A·B".into(),
                value: -1.0,
                text: "-1 s".into(),
                interaction: true,
            },
        ];
        let svg = bars("effects", "t", &items, 700.0);
        assert_eq!(svg.matches("class=\"mark").count(), 2);
        assert!(svg.contains("A·B"));
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
    }
}
