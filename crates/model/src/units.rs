//! One way to print values, for people and for machines, used by every command and export:
//! a value with its unit ([`Scale`], [`show_value`]: `428.912 ms`), a number for a file
//! ([`plain_number`]: `0.310332`, never `0.31033199999999994`), and the empty configuration's one spelling
//! (re-exported from `space` by the commands: `(no option selected)`).

/// Significant digits of [`plain_number`].
pub const SIGNIFICANT_DIGITS: usize = 12;

/// A number for a CSV or JSON export and for a person alike: rounded to
/// [`SIGNIFICANT_DIGITS`] significant digits, which drops the noise of binary floating point
/// (`0.31033199999999994` is `0.310332`) and keeps what any measurement holds, printed the
/// shortest way that reads back to that (`1250`, `4.3`, `1.5e-9` below 1e-4).
pub fn plain_number(value: f64) -> String {
    if value == 0.0 || !value.is_finite() {
        return format!("{}", if value == 0.0 { 0.0 } else { value });
    }
    let rounded: f64 = format!("{:.*e}", SIGNIFICANT_DIGITS - 1, value)
        .parse()
        .unwrap_or(value);
    if rounded.abs() < 1e-4 || rounded.abs() >= 1e15 {
        format!("{rounded:e}")
    } else {
        format!("{rounded}")
    }
}

/// A value of a metric for a person: a time in the unit where it reads at least 1, with 3
/// decimals (`428.912 ms`), anything else as [`plain_number`].
pub fn show_value(value: f64, metric: Option<&str>) -> String {
    let scale = Scale::for_metric(metric, value);
    if scale.unit.is_empty() {
        plain_number(value)
    } else {
        scale.show(value, 3)
    }
}

/// A unit to print values in: values are multiplied by `factor`; `unit` is empty when the
/// metric is not a time (or unknown).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Scale {
    pub factor: f64,
    pub unit: &'static str,
}

impl Scale {
    /// How many decimals show a value measured to `resolution` (in the metric's unit, before
    /// this scale) and no more: a profiler sampling every 1 ms, shown in ms, has 0.
    pub fn decimals_for(&self, resolution: f64) -> Option<usize> {
        let step = resolution * self.factor;
        (step.is_finite() && step > 0.0).then(|| (-step.log10()).ceil().max(0.0) as usize)
    }

    /// Values printed as they are.
    pub const NONE: Scale = Scale {
        factor: 1.0,
        unit: "",
    };

    /// For a metric in seconds, the unit (s, ms, µs, ns) in which `largest` is at least 1
    /// (seconds for 0); [`Scale::NONE`] for other metrics.
    pub fn for_metric(metric: Option<&str>, largest: f64) -> Scale {
        if !metric.is_some_and(is_seconds) {
            return Scale::NONE;
        }
        let largest = largest.abs();
        if largest == 0.0 || !largest.is_finite() {
            return Scale {
                factor: 1.0,
                unit: "s",
            };
        }
        let units = [(1.0, "s"), (1e3, "ms"), (1e6, "µs"), (1e9, "ns")];
        units
            .into_iter()
            .find(|(factor, _)| largest * factor >= 1.0)
            .map_or(
                Scale {
                    factor: 1e9,
                    unit: "ns",
                },
                |(factor, unit)| Scale { factor, unit },
            )
    }

    /// A value in this unit with `precision` decimals: `12.40 ms`.
    pub fn show(&self, value: f64, precision: usize) -> String {
        let text = format!("{:.precision$}", value * self.factor);
        if self.unit.is_empty() {
            text
        } else {
            format!("{text} {}", self.unit)
        }
    }
}

/// Whether a model's `metric` text names a time in seconds (`time_s`, `wall time (s)`,
/// `cpu, end to end`), not memory, instructions or a ratio to a reference.
pub fn is_seconds(metric: &str) -> bool {
    let m = metric.to_ascii_lowercase();
    if ["rss", "instructions", "per_reference", "kib"]
        .iter()
        .any(|w| m.contains(w))
    {
        return false;
    }
    m.contains("(s)")
        || m.contains("_s")
        || m.contains("time")
        || ["wall", "cpu", "user", "system"]
            .iter()
            .any(|w| m.starts_with(w))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_a_time_unit_for_the_largest_value() {
        assert_eq!(Scale::for_metric(Some("time_s"), 2.5).unit, "s");
        assert_eq!(Scale::for_metric(Some("wall time (s)"), 0.0251).unit, "ms");
        assert_eq!(Scale::for_metric(Some("cpu, end to end"), 3e-5).unit, "µs");
        assert_eq!(Scale::for_metric(Some("max_rss_kib"), 0.001), Scale::NONE);
        assert_eq!(Scale::for_metric(None, 0.001), Scale::NONE);
        assert_eq!(Scale::for_metric(Some("time_s"), 0.0).unit, "s");
        let ms = Scale::for_metric(Some("wall_s"), 0.0251);
        assert_eq!(ms.show(0.0251, 1), "25.1 ms");
    }

    #[test]
    fn plain_numbers_are_short_and_read_back() {
        assert_eq!(plain_number(0.31033199999999994), "0.310332");
        assert_eq!(plain_number(0.4289119851056211), "0.428911985106");
        assert_eq!(plain_number(4.300000000000001), "4.3");
        assert_eq!(plain_number(1250.0), "1250");
        assert_eq!(plain_number(-0.1435), "-0.1435");
        assert_eq!(plain_number(1.5e-9), "1.5e-9");
        assert_eq!(plain_number(0.0), "0");
        assert_eq!(show_value(0.4289119851056211, Some("time_s")), "428.912 ms");
        assert_eq!(show_value(2.5, Some("time_s")), "2.500 s");
        assert_eq!(
            show_value(31033.199999999997, Some("max_rss_kib")),
            "31033.2"
        );
    }

    #[test]
    fn a_resolution_sets_the_decimals_shown() {
        let ms = Scale {
            factor: 1e3,
            unit: "ms",
        };
        assert_eq!(ms.decimals_for(0.001), Some(0));
        assert_eq!(ms.decimals_for(0.0001), Some(1));
        assert_eq!(Scale::NONE.decimals_for(0.001), Some(3));
        assert_eq!(ms.decimals_for(0.0), None);
    }
}
