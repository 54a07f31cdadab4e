//! Step statistics and step classes (reference §3.11), the parts SQL cannot express:
//! step duration statistics and the 2-means clustering on log step time.

use super::doc::{DurationStats, StepClass};
use crate::stats::quantile;

/// DurationStats: count, mean, median, p90, min, max (null when empty).
pub fn duration_stats(values: &[f64]) -> DurationStats {
    let mut v = values.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    if v.is_empty() {
        return DurationStats::default();
    }
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    DurationStats { count: v.len() as i64, mean: Some(mean), median: quantile(&v, 0.5), p90: quantile(&v, 0.9), min: Some(v[0]), max: Some(v[v.len() - 1]) }
}

/// The step whose duration is closest to the median (ties: lower step number).
fn representative(steps: &[(i64, f64)]) -> Option<(i64, f64)> {
    let mut d: Vec<f64> = steps.iter().map(|s| s.1).collect();
    d.sort_by(|a, b| a.total_cmp(b));
    let median = quantile(&d, 0.5)?;
    steps.iter().copied().min_by(|a, b| (a.1 - median).abs().total_cmp(&(b.1 - median).abs()).then(a.0.cmp(&b.0)))
}

fn class(name: &str, members: &[(i64, f64)], steady: usize, periodicity: Option<i64>) -> StepClass {
    let durations: Vec<f64> = members.iter().map(|s| s.1).collect();
    let rep = representative(members);
    StepClass {
        name: name.to_string(),
        count: members.len() as i64,
        fraction_of_steady: members.len() as f64 / steady as f64,
        duration_stats: duration_stats(&durations),
        representative_step: rep.map(|r| r.0),
        representative_duration: rep.map(|r| r.1),
        periodicity,
    }
}

/// Light/heavy classes of steady steps (step number, duration), or one `typical` class.
pub fn step_classes(steady: &[(i64, f64)]) -> Vec<StepClass> {
    classify(steady).into_iter().map(|(c, _)| c).collect()
}

/// The classes of [`step_classes`], each with the step numbers it holds.
pub fn classify(steady: &[(i64, f64)]) -> Vec<(StepClass, Vec<i64>)> {
    if steady.is_empty() {
        return Vec::new();
    }
    let with_members =
        |name: &str, members: &[(i64, f64)], periodicity| (class(name, members, steady.len(), periodicity), members.iter().map(|s| s.0).collect());
    let typical = || vec![with_members("typical", steady, None)];
    if steady.len() < 6 {
        return typical();
    }
    let min = steady.iter().map(|s| s.1).fold(f64::INFINITY, f64::min);
    let max = steady.iter().map(|s| s.1).fold(f64::NEG_INFINITY, f64::max);
    if min <= 0.0 || max / min < 1.25 {
        return typical();
    }
    let logs: Vec<f64> = steady.iter().map(|s| s.1.ln()).collect();
    let (mut lo, mut hi) = (min.ln(), max.ln());
    let mut labels = vec![false; logs.len()];
    for _ in 0..40 {
        let new: Vec<bool> = logs.iter().map(|&x| (x - hi).abs() < (x - lo).abs()).collect();
        let (nh, nl) = (new.iter().filter(|&&h| h).count(), new.iter().filter(|&&h| !h).count());
        if nh == 0 || nl == 0 {
            return typical();
        }
        let new_lo = logs.iter().zip(&new).filter(|(_, &h)| !h).map(|(x, _)| x).sum::<f64>() / nl as f64;
        let new_hi = logs.iter().zip(&new).filter(|(_, &h)| h).map(|(x, _)| x).sum::<f64>() / nh as f64;
        let converged = (new_lo - lo).abs() < 1e-9 && (new_hi - hi).abs() < 1e-9 && new == labels;
        lo = new_lo;
        hi = new_hi;
        labels = new;
        if converged {
            break;
        }
    }
    let light: Vec<(i64, f64)> = steady.iter().zip(&labels).filter(|(_, &h)| !h).map(|(s, _)| *s).collect();
    let heavy: Vec<(i64, f64)> = steady.iter().zip(&labels).filter(|(_, &h)| h).map(|(s, _)| *s).collect();
    let n = steady.len() as f64;
    if light.len() < 2 || heavy.len() < 2 || (light.len() as f64) < 0.1 * n || (heavy.len() as f64) < 0.1 * n {
        return typical();
    }
    let med = |v: &[(i64, f64)]| {
        let mut d: Vec<f64> = v.iter().map(|s| s.1).collect();
        d.sort_by(|a, b| a.total_cmp(b));
        quantile(&d, 0.5).unwrap_or(0.0)
    };
    if med(&heavy) < 1.5 * med(&light) {
        return typical();
    }
    vec![with_members("light", &light, None), with_members("heavy", &heavy, periodicity(&heavy))]
}

/// The most common spacing (> 1) between heavy steps, when it occurs at least twice.
fn periodicity(heavy: &[(i64, f64)]) -> Option<i64> {
    let mut steps: Vec<i64> = heavy.iter().map(|s| s.0).collect();
    steps.sort_unstable();
    let diffs: Vec<i64> = steps.windows(2).map(|w| w[1] - w[0]).filter(|&d| d > 1).collect();
    if diffs.len() < 2 {
        return None;
    }
    let mut counts: std::collections::BTreeMap<i64, usize> = std::collections::BTreeMap::new();
    for d in diffs {
        *counts.entry(d).or_default() += 1;
    }
    let (&d, &c) = counts.iter().max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))?;
    (c >= 2).then_some(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_step_stats() {
        // Steps 2..5 of the reference trace: 120, 130, 140, 150.
        let s = duration_stats(&[120.0, 130.0, 140.0, 150.0]);
        assert_eq!((s.median, s.p90), (Some(135.0), Some(147.0)));
        let c = step_classes(&[(2, 120.0), (3, 130.0), (4, 140.0), (5, 150.0)]);
        assert_eq!((c[0].name.as_str(), c[0].representative_step), ("typical", Some(3)));
    }

    #[test]
    fn heavy_steps_every_third() {
        let steps: Vec<(i64, f64)> = (0..12).map(|i| (i, if i % 3 == 2 { 300.0 } else { 100.0 + i as f64 })).collect();
        let c = step_classes(&steps);
        assert_eq!((c[1].name.as_str(), c[1].count, c[1].periodicity), ("heavy", 4, Some(3)));
    }
}
