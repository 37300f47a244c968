//! Plots of sampled histories as SVG: one panel per configuration (its measurements over
//! commits, each panel scaled to its own range) with the detected change points as
//! vertical lines, red where the change point is associated with the configuration.

use std::fmt::Write;

use crate::search::Detection;

const WIDTH: f64 = 800.0;
const PANEL: f64 = 90.0;
const MARGIN: f64 = 40.0;

/// Up to `panels` configurations (those with the most measurements first).
pub fn svg(d: &Detection, panels: usize) -> String {
    let mut order: Vec<usize> = (0..d.sample.len()).collect();
    order.sort_by_key(|i| std::cmp::Reverse(d.sample[*i].history.len()));
    order.truncate(panels);
    let height = MARGIN + PANEL * order.len() as f64 + 10.0;
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" font-family="sans-serif" font-size="10">"#
    );
    let _ = writeln!(
        out,
        r#"<text x="{MARGIN}" y="16" font-size="12">{} change point(s) over {} commits; {} measurements</text>"#,
        d.change_points.len(),
        d.commits,
        d.measurements
    );
    let x = |commit: usize| {
        MARGIN
            + (WIDTH - 2.0 * MARGIN) * commit.saturating_sub(d.first_commit) as f64
                / (d.commits.max(2) - 1) as f64
    };
    for (row, &i) in order.iter().enumerate() {
        let s = &d.sample[i];
        let top = MARGIN / 1.5 + PANEL * row as f64;
        let (lo, hi) = s
            .history
            .values()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), v| {
                (l.min(*v), h.max(*v))
            });
        let span = if hi > lo { hi - lo } else { 1.0 };
        let y = |v: f64| top + PANEL - 18.0 - (PANEL - 30.0) * (v - lo) / span;
        let _ = writeln!(
            out,
            r##"<rect x="{MARGIN}" y="{top}" width="{}" height="{}" fill="none" stroke="#ccc"/>"##,
            WIDTH - 2.0 * MARGIN,
            PANEL - 8.0
        );
        let label = space::shown_configuration(&s.configuration);
        let _ = writeln!(
            out,
            r#"<text x="{}" y="{}">{}</text>"#,
            MARGIN + 4.0,
            top + 11.0,
            escape(label)
        );
        for c in &d.change_points {
            let mine = c.all_configurations
                || c.options.iter().all(|o| {
                    d.features
                        .iter()
                        .position(|f| f == o)
                        .is_some_and(|f| s.row.get(f) == Some(&1.0))
                });
            let _ = writeln!(
                out,
                r##"<line x1="{0:.1}" x2="{0:.1}" y1="{1}" y2="{2}" stroke="{3}" stroke-dasharray="3,2"/>"##,
                x(c.commit),
                top,
                top + PANEL - 8.0,
                if mine { "#d62728" } else { "#bbb" }
            );
        }
        let points: Vec<String> = s
            .history
            .iter()
            .map(|(c, v)| format!("{:.1},{:.1}", x(*c), y(*v)))
            .collect();
        let _ = writeln!(
            out,
            r##"<polyline points="{}" fill="none" stroke="#1f77b4" stroke-width="1"/>"##,
            points.join(" ")
        );
        for p in &points {
            let (px, py) = p.split_once(',').expect("x,y");
            let _ = writeln!(
                out,
                r##"<circle cx="{px}" cy="{py}" r="1.5" fill="#1f77b4"/>"##
            );
        }
    }
    out.push_str("</svg>\n");
    out
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
