//! The page around the charts: escaping, the inline style sheet, tables.

use std::fmt::Write;

/// Text made safe for HTML element content and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// Everything the page needs to look right, inline: no file or network is loaded. Prints
/// in black and white with the colours as shades.
pub const STYLE: &str = r#"
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto; max-width: 1000px; padding: 0 1em; color: #1d2330; background: #fff; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; }
h2 { font-size: 1.25em; margin-top: 2em; border-bottom: 1px solid #d5d9e0; padding-bottom: 0.2em; }
h3 { font-size: 1.05em; margin-top: 1.4em; }
.meta { color: #5a6272; }
.top { font-size: 1.15em; background: #f3f6fb; border-left: 4px solid #2f6fb3; padding: 0.6em 0.9em; }
.warning { background: #fff4e0; border-left: 4px solid #d08a00; padding: 0.4em 0.8em; }
table { border-collapse: collapse; margin: 0.6em 0; font-size: 0.92em; }
th, td { padding: 0.2em 0.7em; border-bottom: 1px solid #e3e6eb; text-align: left; vertical-align: top; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
code, pre { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 0.9em; }
pre { background: #f6f7f9; padding: 0.5em 0.8em; overflow-x: auto; }
pre .line-no { color: #8a91a0; user-select: none; }
svg.chart { display: block; max-width: 100%; height: auto; margin: 0.6em 0; }
svg .label, svg .value, svg .tick, svg .axis-label { font-size: 12px; fill: #1d2330; }
svg .small { font-size: 10px; }
svg .tick { fill: #5a6272; }
svg .slower { fill: #c0392b; }
svg .faster { fill: #1e8449; }
svg .interaction { fill: #7d3c98; }
svg .axis { stroke: #1d2330; stroke-width: 1; }
svg .grid { stroke: #e3e6eb; stroke-width: 1; }
svg .diagonal { stroke: #8a91a0; stroke-dasharray: 4 3; }
svg .error { stroke: #5a6272; stroke-width: 1.2; }
svg circle.mark { fill: #2f6fb3; }
svg circle.hollow { fill: #fff; stroke: #2f6fb3; stroke-width: 1.5; }
svg .series { fill: none; stroke-width: 2; }
svg .s0 { stroke: #2f6fb3; } svg .s1 { stroke: #c0392b; } svg .s2 { stroke: #1e8449; }
svg .s3 { stroke: #7d3c98; } svg .s4 { stroke: #d08a00; } svg .s5 { stroke: #5a6272; }
.legend span { margin-right: 1.2em; }
.swatch { display: inline-block; width: 0.9em; height: 0.9em; vertical-align: middle; margin-right: 0.3em; }
@media print { body { max-width: none; margin: 0; } h2 { break-after: avoid; } svg.chart, table { break-inside: avoid; } details { display: block; } }
"#;

/// A table: a header row, then rows of cells already escaped; columns listed in `numeric`
/// are right-aligned.
pub fn table(header: &[&str], rows: &[Vec<String>], numeric: &[usize]) -> String {
    let mut out = String::from("<table><thead><tr>");
    for (i, h) in header.iter().enumerate() {
        let class = if numeric.contains(&i) {
            " class=\"num\""
        } else {
            ""
        };
        let _ = write!(out, "<th{class}>{}</th>", escape(h));
    }
    out.push_str("</tr></thead><tbody>");
    for row in rows {
        out.push_str("<tr>");
        for (i, cell) in row.iter().enumerate() {
            let class = if numeric.contains(&i) {
                " class=\"num\""
            } else {
                ""
            };
            let _ = write!(out, "<td{class}>{cell}</td>");
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table>");
    out
}

/// The legend of the bar charts' colours.
pub const BAR_LEGEND: &str = r#"<p class="legend"><span><span class="swatch" style="background:#c0392b"></span>slower</span><span><span class="swatch" style="background:#1e8449"></span>faster</span><span><span class="swatch" style="background:#7d3c98"></span>interaction</span></p>"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup() {
        assert_eq!(escape("a<b & \"c\""), "a&lt;b &amp; &quot;c&quot;");
    }
}
