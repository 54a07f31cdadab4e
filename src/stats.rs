//! Statistics over step times: numpy-style quantiles, and the noise-aware comparison of two
//! samples (a bootstrap confidence interval of the difference of medians and a Mann-Whitney
//! U rank test, both deterministic: fixed-seed resampling) with its verdict.

use serde_json::{json, Value};

/// numpy's default (linear) quantile: position (n-1)·q between sorted values.
pub fn quantile(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let pos = (sorted.len() - 1) as f64 * q;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    Some(sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64))
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    quantile(v, 0.5).unwrap_or(f64::NAN)
}

/// xorshift64*: a small deterministic generator, so the same inputs give the same interval.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

pub const BOOTSTRAP_RESAMPLES: usize = 2000;

/// 95 % bootstrap interval of median(after) − median(before).
pub fn bootstrap_median_delta(before: &[f64], after: &[f64]) -> (f64, f64) {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut deltas = Vec::with_capacity(BOOTSTRAP_RESAMPLES);
    let mut b = vec![0.0; before.len()];
    let mut a = vec![0.0; after.len()];
    for _ in 0..BOOTSTRAP_RESAMPLES {
        for x in b.iter_mut() {
            *x = before[rng.below(before.len())];
        }
        for x in a.iter_mut() {
            *x = after[rng.below(after.len())];
        }
        deltas.push(median(&mut a) - median(&mut b));
    }
    deltas.sort_by(|x, y| x.total_cmp(y));
    (quantile(&deltas, 0.025).unwrap(), quantile(&deltas, 0.975).unwrap())
}

/// Two-sided p-value of the Mann-Whitney U test (normal approximation with tie correction).
pub fn mann_whitney_p(before: &[f64], after: &[f64]) -> f64 {
    let (n1, n2) = (before.len() as f64, after.len() as f64);
    let mut all: Vec<(f64, usize)> = before.iter().map(|&x| (x, 0)).chain(after.iter().map(|&x| (x, 1))).collect();
    all.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut ranks = vec![0.0; all.len()];
    let mut tie_term = 0.0;
    let mut i = 0;
    while i < all.len() {
        let mut j = i;
        while j + 1 < all.len() && all[j + 1].0 == all[i].0 {
            j += 1;
        }
        let rank = (i + j) as f64 / 2.0 + 1.0;
        for r in ranks.iter_mut().take(j + 1).skip(i) {
            *r = rank;
        }
        let t = (j - i + 1) as f64;
        tie_term += t * t * t - t;
        i = j + 1;
    }
    let r1: f64 = all.iter().zip(&ranks).filter(|(x, _)| x.1 == 0).map(|(_, r)| r).sum();
    let u = r1 - n1 * (n1 + 1.0) / 2.0;
    let n = n1 + n2;
    let sigma2 = n1 * n2 / 12.0 * ((n + 1.0) - tie_term / (n * (n - 1.0)));
    if sigma2 <= 0.0 {
        return 1.0;
    }
    let z = ((u - n1 * n2 / 2.0).abs() - 0.5).max(0.0) / sigma2.sqrt();
    (2.0 * (1.0 - normal_cdf(z))).clamp(0.0, 1.0)
}

fn normal_cdf(z: f64) -> f64 {
    0.5 * (1.0 + erf(z / std::f64::consts::SQRT_2))
}

/// Abramowitz–Stegun 7.1.26 (|error| < 1.5e-7).
fn erf(x: f64) -> f64 {
    let t = 1.0 / (1.0 + 0.327_591_1 * x.abs());
    let y = 1.0 - (((((1.061_405_429 * t - 1.453_152_027) * t) + 1.421_413_741) * t - 0.284_496_736) * t + 0.254_829_592) * t * (-x * x).exp();
    if x >= 0.0 {
        y
    } else {
        -y
    }
}

/// The verdict on steady step times: `improved`, `regressed`, `within noise`, or
/// `insufficient steps` (fewer than 3 steady steps on a side).
pub fn step_verdict(before: &[f64], after: &[f64]) -> Value {
    if before.len() < 3 || after.len() < 3 {
        return json!({"verdict": "insufficient steps", "n_before": before.len(), "n_after": after.len()});
    }
    let (mut b, mut a) = (before.to_vec(), after.to_vec());
    let delta = median(&mut a) - median(&mut b);
    let (lo, hi) = bootstrap_median_delta(before, after);
    let p = mann_whitney_p(before, after);
    let significant = (lo > 0.0 || hi < 0.0) && p < 0.05;
    let verdict = match (significant, delta < 0.0) {
        (false, _) => "within noise",
        (true, true) => "improved",
        (true, false) => "regressed",
    };
    json!({
        "verdict": verdict, "median_delta": delta, "median_delta_pct": if median(&mut b) > 0.0 { json!(delta / median(&mut b) * 100.0) } else { Value::Null },
        "ci95_low": lo, "ci95_high": hi, "mann_whitney_p": p, "n_before": before.len(), "n_after": after.len(),
        "method": "95% bootstrap CI of the median difference (2000 fixed-seed resamples) and a two-sided Mann-Whitney U test; significant when the CI excludes 0 and p < 0.05",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clear_improvement_and_noise() {
        let before: Vec<f64> = (0..10).map(|i| 63.0 + (i % 3) as f64).collect();
        let after: Vec<f64> = (0..10).map(|i| 36.0 + (i % 3) as f64).collect();
        assert_eq!(step_verdict(&before, &after)["verdict"], "improved");
        assert_eq!(step_verdict(&after, &before)["verdict"], "regressed");
        let same: Vec<f64> = (0..10).map(|i| 63.0 + ((i * 7) % 5) as f64).collect();
        assert_eq!(step_verdict(&before, &same)["verdict"], "within noise");
        assert_eq!(step_verdict(&before[..2], &after)["verdict"], "insufficient steps");
        // Deterministic.
        assert_eq!(step_verdict(&before, &same), step_verdict(&before, &same));
    }

    #[test]
    fn rank_test_p_values() {
        let a = [1.0, 2.0, 3.0, 4.0, 5.0];
        let b = [6.0, 7.0, 8.0, 9.0, 10.0];
        assert!(mann_whitney_p(&a, &b) < 0.02);
        assert!(mann_whitney_p(&a, &a) > 0.9);
    }
}
