//! The report's sections: the header, one per model, the measurements, the history.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::Path;

use model::{Effects, ModelFile, Scale, Term, Transform, importances};
use space::shown_configuration;

use crate::data::Measurements;
use crate::html::{BAR_LEGEND, escape, table};
use crate::svg::{self, Bar, Interval, Point};
use crate::{Input, NamedModel};

/// How many terms, regions and configurations a chart shows at most.
const MOST_BARS: usize = 20;
const MOST_ROWS: usize = 60;
const CHART_WIDTH: f64 = 900.0;

pub fn header(input: &Input, system: &str) -> String {
    let mut out = format!("<h1>What matters in {}</h1>", escape(system));
    if let Some(m) = &input.measurements {
        let _ = write!(
            out,
            "<p class=\"meta\">Store <code>{}</code>, spec {}{}, {} measured configurations; metric: {}.</p>",
            escape(&m.store),
            escape(&m.spec_hash),
            if m.variant.is_empty() {
                String::new()
            } else {
                format!(", variant <code>{}</code>", escape(&m.variant))
            },
            m.configurations.len(),
            escape(&m.metric)
        );
        if let Some(b) = &m.builds {
            let _ = write!(
                out,
                "<p class=\"meta\" id=\"builds\">{} builds of the build options' values ({} failed), {:.1} s building, apart from the runs' times.</p>",
                b.builds, b.failed, b.seconds
            );
        }
        if !m.variants.is_empty() {
            let listed: Vec<String> = m
                .variants
                .iter()
                .map(|(v, n)| format!("<code>{}</code> ({n} configurations)", escape(v)))
                .collect();
            let _ = write!(
                out,
                "<p class=\"meta\">The store also holds runs under variants: {}.</p>",
                listed.join(", ")
            );
        }
    }
    if input.models.is_empty() {
        out.push_str("<p class=\"meta\">No model given: the effects below are read from the measurements alone.</p>");
    }
    if let Some(top) = input.models.first().and_then(|m| top_option(m, input)) {
        let _ = write!(out, "<p class=\"top\" id=\"top-option\">{top}</p>");
    } else if let Some(m) = &input.measurements
        && let Some(bar) = measured_effects(m).first()
    {
        let _ = write!(
            out,
            "<p class=\"top\" id=\"top-option\">Largest measured effect: <strong>{}</strong> ({}).</p>",
            escape(&bar.label),
            escape(&bar.text)
        );
    }
    out
}

/// The sentence naming the first model's most influential option.
fn top_option(named: &NamedModel, input: &Input) -> Option<String> {
    let effects = effects(&named.file, input.measurements.as_ref()).ok()?;
    let ranked = option_bars(&named.file, &effects);
    let first = ranked.first()?;
    Some(format!(
        "Most influential option: <strong>{}</strong> ({}, by <code>{}</code>).",
        escape(&first.label),
        escape(&first.text),
        escape(&named.name)
    ))
}

/// The model's effects over the measured space's valid configurations (see
/// [`crate::effect_configurations`]).
fn effects(file: &ModelFile, measurements: Option<&Measurements>) -> Result<Effects, String> {
    Effects::of(file, crate::effect_configurations(file, measurements)).map_err(|e| e.to_string())
}

/// How an effect reads: `+12.4 ms`, or `×1.85` for a model of ln(performance).
fn effect_text(effect: f64, file: &ModelFile, scale: &Scale) -> String {
    match file.transform {
        Transform::Log => format!("×{:.3}", effect.exp()),
        Transform::Identity => {
            let sign = if effect < 0.0 { "−" } else { "+" };
            format!("{sign}{}", scale.show(effect.abs(), 2))
        }
    }
}

/// Options ranked by their effect (by their importance for tree models without terms),
/// coloured by its sign: what the larger value does to the prediction.
fn option_bars(file: &ModelFile, effects: &Effects) -> Vec<Bar> {
    let scale = Scale::of_model(file, effects, Some("time_s"));
    let mut bars: Vec<Bar> = effects
        .options
        .iter()
        .map(|o| Bar {
            label: o.option.clone(),
            value: o.effect,
            text: effect_text(o.effect, file, &scale),
            interaction: false,
        })
        .collect();
    if file.terms.terms().iter().all(|t| t.options.is_empty()) && !file.trees.is_empty() {
        bars = importances(&file.trees)
            .into_iter()
            .map(|(o, share)| Bar {
                label: o,
                value: share,
                text: format!("{:.1} % of the trees' gain", share * 100.0),
                interaction: false,
            })
            .collect();
    }
    bars.sort_by(|a, b| b.value.abs().total_cmp(&a.value.abs()));
    bars
}

/// The terms but the intercept and those too small to see (below 0.1 % of the largest).
fn term_bars(file: &ModelFile, effects: &Effects, terms: &[&Term]) -> Vec<Bar> {
    let scale = Scale::of_model(file, effects, Some("time_s"));
    let largest = terms
        .iter()
        .filter(|t| !t.options.is_empty())
        .map(|t| effects.term(t).abs())
        .fold(0.0, f64::max);
    terms
        .iter()
        .filter(|t| !t.options.is_empty() && effects.term(t).abs() >= 1e-3 * largest)
        .map(|t| {
            let effect = effects.term(t);
            let offset = if effects.is_offset(t) {
                " (offset by other terms)"
            } else {
                ""
            };
            Bar {
                label: t.label(),
                value: effect,
                text: format!("{}{offset}", effect_text(effect, file, &scale)),
                interaction: t.options.len() > 1,
            }
        })
        .collect()
}

pub fn model(named: &NamedModel, input: &Input) -> String {
    let file = &named.file;
    let mut out = format!("<h2>Model <code>{}</code></h2>", escape(&named.name));
    let effects = match effects(file, input.measurements.as_ref()) {
        Ok(effects) => effects,
        Err(e) => {
            let _ = write!(
                out,
                "<p class=\"warning\">Warning: the model cannot predict these configurations: {}.</p>",
                escape(&e)
            );
            return out;
        }
    };
    let scale = Scale::of_model(file, &effects, Some("time_s"));
    out.push_str(&provenance(file, &scale));
    for w in model::warnings(file) {
        let _ = write!(out, "<p class=\"warning\">Warning: {}.</p>", escape(&w));
    }
    let _ = write!(
        out,
        "<p class=\"meta\">Effects are read over {}: an option's is the largest difference in prediction between two of them that differ in the option (and, for a member of an alternative, the member swapped for it), a term's how far its own value moves; none exceeds the model's spread, {}.</p>",
        escape(&effects.configurations.described),
        escape(&spread_text(&effects, file, &scale))
    );
    let options = option_bars(file, &effects);
    if !options.is_empty() {
        out.push_str("<h3>Options, ranked by the largest difference each makes</h3>");
        out.push_str(&svg::bars(
            "options",
            "Options by effect",
            &options[..options.len().min(MOST_BARS)],
            CHART_WIDTH,
        ));
    }
    let ranked = file.terms.ranked_terms(&effects);
    let terms = term_bars(file, &effects, &ranked);
    if !terms.is_empty() {
        let _ = write!(
            out,
            "<h3>Terms, ranked by effect{}</h3>{BAR_LEGEND}",
            if file.transform == Transform::Log {
                " (as factors: the model is of ln(performance))"
            } else {
                ""
            }
        );
        out.push_str(&svg::bars(
            "terms",
            "Terms by effect",
            &terms[..terms.len().min(MOST_BARS)],
            CHART_WIDTH,
        ));
        out.push_str(&interactions(&terms));
    }
    if let Some(m) = &input.measurements {
        out.push_str(&predicted_vs_measured(file, m));
    }
    if !file.regions.is_empty() {
        out.push_str(&regions(file, &effects, &scale, &input.source_dirs));
    }
    out
}

/// The model's largest prediction over its smallest: `×15.2` for a log model, else their
/// difference in the scale's unit.
fn spread_text(effects: &Effects, file: &ModelFile, scale: &Scale) -> String {
    match file.transform {
        Transform::Log => format!("×{:.3}", effects.spread().exp()),
        Transform::Identity => scale.show(effects.spread(), 2),
    }
}

fn provenance(file: &ModelFile, scale: &Scale) -> String {
    let p = &file.provenance;
    let text = |k: &str| p.get(k).and_then(|v| v.as_str()).map(str::to_string);
    let mut parts = Vec::new();
    if let Some(a) = text("approach") {
        parts.push(format!("approach {}", escape(&a)));
    }
    if let Some(l) = text("resolved").or_else(|| text("learner")) {
        parts.push(format!("learner <code>{}</code>", escape(&l)));
    }
    if let Some(rows) = p.get("training").and_then(|t| t["rows"].as_array()) {
        parts.push(format!("built from {} configurations", rows.len()));
    }
    if let Some(metric) = &file.metric {
        parts.push(format!("metric {}", escape(metric)));
    }
    if !scale.unit.is_empty() {
        parts.push(format!("effects in {}", scale.unit));
    }
    let intercept = match file.transform {
        Transform::Log => format!("base e^{:.3}", file.terms.intercept()),
        Transform::Identity => format!("base {}", scale.show(file.terms.intercept(), 2)),
    };
    parts.push(intercept);
    format!("<p class=\"meta\">{}.</p>", parts.join("; "))
}

fn interactions(bars: &[Bar]) -> String {
    let listed: Vec<String> = bars
        .iter()
        .filter(|b| b.interaction)
        .map(|b| format!("<code>{}</code> {}", escape(&b.label), escape(&b.text)))
        .collect();
    if listed.is_empty() {
        return "<p>No interaction terms: every option acts on its own.</p>".into();
    }
    format!(
        "<p>Interactions ({}): {}.</p>",
        listed.len(),
        listed.join(", ")
    )
}

/// The model's prediction of each measured configuration against its value, with the
/// value's 95 % interval; configurations the model was built from are hollow.
fn predicted_vs_measured(file: &ModelFile, m: &Measurements) -> String {
    let names = m.space.names();
    let Ok(bound) = file.bind(&names) else {
        return "<p class=\"meta\">The model names options the measured space lacks: no comparison with the measurements.</p>".into();
    };
    let training = training_rows(file, &names);
    let scale = Scale::for_metric(
        m.seconds.then_some("time_s"),
        m.configurations
            .iter()
            .map(|c| c.summary.value)
            .fold(0.0, f64::max),
    );
    let mut points = Vec::new();
    let (mut errors, mut unseen_errors) = (Vec::new(), Vec::new());
    for c in &m.configurations {
        let predicted = bound.predict(&c.values);
        let trained = training.iter().any(|r| r == &c.values);
        let error = (predicted - c.summary.value).abs() / c.summary.value.abs().max(1e-12);
        errors.push(error);
        if !trained {
            unseen_errors.push(error);
        }
        points.push(Point {
            x: c.summary.value * scale.factor,
            y: predicted * scale.factor,
            x_error: c.summary.ci95 * scale.factor,
            hollow: trained,
            text: format!(
                "{}: measured {}, predicted {}",
                shown_configuration(&c.configuration),
                scale.show(c.summary.value, 3),
                scale.show(predicted, 3)
            ),
        });
    }
    if points.is_empty() {
        return String::new();
    }
    let unit = if scale.unit.is_empty() {
        String::new()
    } else {
        format!(" ({})", scale.unit)
    };
    let mape = |e: &[f64]| 100.0 * e.iter().sum::<f64>() / e.len().max(1) as f64;
    let mut out = String::from("<h3>Predicted against measured</h3>");
    out.push_str(&svg::scatter(
        "predicted-vs-measured",
        "Predicted against measured",
        &points,
        (
            &format!("measured (fastest-half mean){unit}, with its 95 % interval"),
            &format!("predicted{unit}"),
        ),
    ));
    let _ = write!(
        out,
        "<p>Mean absolute percentage error {:.1} % on all {} measured configurations{}. Hollow points: configurations the model was built from; the dashed line is a perfect prediction.</p>",
        mape(&errors),
        errors.len(),
        if unseen_errors.is_empty() || unseen_errors.len() == errors.len() {
            String::new()
        } else {
            format!(
                "; {:.1} % on the {} it was not built from",
                mape(&unseen_errors),
                unseen_errors.len()
            )
        }
    );
    out
}

/// The model's recorded training configurations, as values in the order of `names`.
fn training_rows(file: &ModelFile, names: &[&str]) -> Vec<Vec<f64>> {
    let Some(training) = file.provenance.get("training") else {
        return vec![];
    };
    let columns: Vec<&str> = training["columns"]
        .as_array()
        .map(|c| c.iter().filter_map(|v| v.as_str()).collect())
        .unwrap_or_default();
    let at: Vec<Option<usize>> = names
        .iter()
        .map(|n| columns.iter().position(|c| c == n))
        .collect();
    training["rows"]
        .as_array()
        .map(|rows| {
            rows.iter()
                .map(|r| {
                    at.iter()
                        .map(|i| i.and_then(|i| r.get(i)?.as_f64()).unwrap_or(0.0))
                        .collect()
                })
                .collect()
        })
        .unwrap_or_default()
}

fn regions(
    file: &ModelFile,
    effects: &Effects,
    scale: &Scale,
    dirs: &[std::path::PathBuf],
) -> String {
    let weight = |r: &model::Region| effects.spread_of(&r.terms);
    let mut regions: Vec<&model::Region> = file.regions.iter().collect();
    regions.sort_by(|a, b| weight(b).total_cmp(&weight(a)));
    let bars: Vec<Bar> = regions
        .iter()
        .take(MOST_BARS)
        .map(|r| Bar {
            label: region_name(r),
            value: weight(r),
            text: scale.show(weight(r), 2),
            interaction: false,
        })
        .collect();
    let mut out = format!(
        "<h3>Regions ({}), by how far their local models move over the configurations</h3>",
        file.regions.len()
    );
    out.push_str(&svg::bars(
        "regions",
        "Regions by the size of their local model",
        &bars,
        CHART_WIDTH,
    ));
    for r in regions.iter().take(MOST_ROWS) {
        let _ = write!(
            out,
            "<h4>{}</h4><p>Options: {}. Local model{}: <code>{}</code></p>",
            escape(&region_name(r)),
            if r.options.is_empty() {
                "none".to_string()
            } else {
                escape(&r.options.join(", "))
            },
            if scale.unit.is_empty() {
                String::new()
            } else {
                format!(" ({})", scale.unit)
            },
            escape(&r.terms.format_ranked(effects, scale, 3))
        );
        if let Some(code) = r.location.as_ref().and_then(|l| source_lines(l, dirs)) {
            out.push_str(&code);
        }
    }
    out
}

/// `r0 · main() · main.c:71-79`: the id, the function when known, the place.
fn region_name(r: &model::Region) -> String {
    let mut parts = vec![r.id.clone()];
    if let Some(l) = &r.location {
        if let Some(f) = l.function.as_ref().filter(|f| **f != r.id) {
            parts.push(format!("{f}()"));
        }
        parts.push(format!("{}:{}-{}", l.file, l.lines[0], l.lines[1]));
    }
    parts.join(" · ")
}

/// The region's lines from its source file, found as written or in one of `dirs`; at most
/// 40 lines.
fn source_lines(location: &model::SourceSpan, dirs: &[std::path::PathBuf]) -> Option<String> {
    let path = Path::new(&location.file);
    let text = std::iter::once(path.to_path_buf())
        .chain(dirs.iter().map(|d| d.join(path)))
        .chain(dirs.iter().filter_map(|d| Some(d.join(path.file_name()?))))
        .find_map(|p| std::fs::read_to_string(p).ok())?;
    let [first, last] = location.lines;
    let last = last.min(first.saturating_add(39));
    let mut out = String::from("<details open><summary>source</summary><pre>");
    for (i, line) in text.lines().enumerate() {
        let number = i as u32 + 1;
        if number >= first && number <= last {
            let _ = writeln!(
                out,
                "<span class=\"line-no\">{number:>5}</span>  {}",
                escape(line)
            );
        }
    }
    out.push_str("</pre></details>");
    Some(out)
}

/// Per option, the difference between the mean value of the configurations at its largest
/// value (selected) and at its smallest (not selected), from the measurements alone.
fn measured_effects(m: &Measurements) -> Vec<Bar> {
    let scale = measurement_scale(m);
    let mut bars = Vec::new();
    for (i, o) in m.space.options().iter().enumerate() {
        let values: Vec<f64> = m.configurations.iter().map(|c| c.values[i]).collect();
        let (lo, hi) = values
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
                (a.min(*v), b.max(*v))
            });
        if lo >= hi {
            continue;
        }
        let mean_at = |x: f64| {
            let at: Vec<f64> = m
                .configurations
                .iter()
                .filter(|c| c.values[i] == x)
                .map(|c| c.summary.value)
                .collect();
            at.iter().sum::<f64>() / at.len() as f64
        };
        let difference = mean_at(hi) - mean_at(lo);
        let sign = if difference < 0.0 { "−" } else { "+" };
        bars.push(Bar {
            label: o.name.clone(),
            value: difference,
            text: format!("{sign}{}", scale.show(difference.abs(), 2)),
            interaction: false,
        });
    }
    bars.sort_by(|a, b| b.value.abs().total_cmp(&a.value.abs()));
    bars
}

fn measurement_scale(m: &Measurements) -> Scale {
    let largest = m
        .configurations
        .iter()
        .map(|c| c.summary.value)
        .fold(0.0, f64::max);
    Scale::for_metric(m.seconds.then_some("time_s"), largest)
}

pub fn measurements(m: &Measurements) -> String {
    let scale = measurement_scale(m);
    let mut out = format!(
        "<h2>Measurements ({} configurations)</h2>",
        m.configurations.len()
    );
    if m.configurations.is_empty() {
        out.push_str("<p>Nothing measured in this selection.</p>");
        return out;
    }
    let effects = measured_effects(m);
    if !effects.is_empty() {
        out.push_str("<h3>Options by measured effect</h3><p class=\"meta\">The mean of the configurations' values with the option at its largest value (selected) minus at its smallest (not selected): other options vary too, so this is a rough reading; a model separates them.</p>");
        out.push_str(BAR_LEGEND);
        out.push_str(&svg::bars(
            "measured-effects",
            "Options by measured effect",
            &effects[..effects.len().min(MOST_BARS)],
            CHART_WIDTH,
        ));
    }
    let noisy = m
        .configurations
        .iter()
        .filter(|c| c.summary.cv > 0.10)
        .count();
    let _ = write!(
        out,
        "<h3>Fastest configurations</h3><p class=\"meta\">{noisy} of {} configurations vary by more than 10 % (coefficient of variation) between their runs.</p>",
        m.configurations.len()
    );
    let rows: Vec<Vec<String>> = m
        .configurations
        .iter()
        .take(10)
        .map(|c| {
            vec![
                scale.show(c.summary.value, 3),
                interval_text(c.summary.ci95, c.summary.value),
                format!("{:.1}", c.summary.cv * 100.0),
                c.runs.to_string(),
                format!(
                    "<code>{}</code>",
                    escape(shown_configuration(&c.configuration))
                ),
            ]
        })
        .collect();
    out.push_str(&table(
        &[
            "fastest-half mean",
            "±95 % CI",
            "cv %",
            "runs",
            "configuration",
        ],
        &rows,
        &[0, 1, 2, 3],
    ));
    out.push_str(&noise(m, &scale));
    out
}

/// Every configuration's value (the mean of its fastest half of runs) with its 95 %
/// confidence interval, fastest first.
fn noise(m: &Measurements, scale: &Scale) -> String {
    let rows: Vec<Interval> = m
        .configurations
        .iter()
        .take(MOST_ROWS)
        .map(|c| Interval {
            label: shown_configuration(&c.configuration).to_string(),
            centre: c.summary.value * scale.factor,
            low: (c.summary.value - c.summary.ci95) * scale.factor,
            high: (c.summary.value + c.summary.ci95) * scale.factor,
            text: interval_label(c.summary.value, c.summary.ci95, scale),
        })
        .collect();
    let mut out = String::new();
    let _ = write!(
        out,
        "<h3>Noise: each configuration's fastest-half mean and 95 % confidence interval{}</h3>",
        if scale.unit.is_empty() {
            String::new()
        } else {
            format!(" ({})", scale.unit)
        }
    );
    if m.configurations.len() > MOST_ROWS {
        let _ = write!(
            out,
            "<p class=\"meta\">The {MOST_ROWS} fastest of {}.</p>",
            m.configurations.len()
        );
    }
    out.push_str(&svg::intervals(
        "noise",
        "Fastest-half mean and 95 % confidence interval per configuration",
        &rows,
        CHART_WIDTH,
    ));
    out
}

/// `12.3 ms ± 0.4 ms`; one run has no interval.
fn interval_label(value: f64, ci95: f64, scale: &Scale) -> String {
    if ci95.is_finite() {
        format!("{} ± {}", scale.show(value, 3), scale.show(ci95, 3))
    } else {
        format!("{} (one run: no interval)", scale.show(value, 3))
    }
}

fn interval_text(ci95: f64, value: f64) -> String {
    if ci95.is_finite() && value != 0.0 {
        format!("{:.1} %", 100.0 * ci95 / value.abs())
    } else {
        "–".into()
    }
}

/// The values across `[history]` commits of the configurations measured at most commits.
pub fn history(m: &Measurements) -> String {
    if m.history.len() < 2 {
        return String::new();
    }
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for (_, values) in &m.history {
        for (c, _) in values {
            *counts.entry(c.as_str()).or_default() += 1;
        }
    }
    let mut configurations: Vec<(&str, usize)> = counts.into_iter().collect();
    configurations.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let largest = m
        .history
        .iter()
        .flat_map(|(_, v)| v.iter().map(|(_, x)| *x))
        .fold(0.0, f64::max);
    let scale = Scale::for_metric(m.seconds.then_some("time_s"), largest);
    let series: Vec<(String, Vec<Option<f64>>)> = configurations
        .iter()
        .take(6)
        .map(|(c, _)| {
            let values = m
                .history
                .iter()
                .map(|(_, at_commit)| {
                    at_commit
                        .iter()
                        .find(|(x, _)| x == c)
                        .map(|(_, v)| v * scale.factor)
                })
                .collect();
            (shown_configuration(c).to_string(), values)
        })
        .collect();
    let steps: Vec<String> = m
        .history
        .iter()
        .map(|(c, _)| c.chars().take(8).collect())
        .collect();
    let mut out = format!(
        "<h2>Across versions ({} measured commits)</h2><p class=\"meta\">Median{} of the configurations measured at the most commits, oldest commit first; a step is a change point (<code>knobs changepoints detect</code> finds them).</p>",
        m.history.len(),
        if scale.unit.is_empty() {
            String::new()
        } else {
            format!(" in {}", scale.unit)
        }
    );
    out.push_str(&svg::timeline(
        "history",
        "Medians across commits",
        &steps,
        &series,
    ));
    let legend: Vec<String> = series
        .iter()
        .enumerate()
        .map(|(k, (c, _))| {
            format!(
                "<span><code class=\"s{}\">—</code> {}</span>",
                k % 6,
                escape(c)
            )
        })
        .collect();
    let _ = write!(out, "<p class=\"legend\">{}</p>", legend.join(""));
    out
}
