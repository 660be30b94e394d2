//! Entropic (KL) projection onto the (n,k)-simplex (Rankmax paper §2, Theorem 2 with
//! the negative entropy; k = 1 gives softmax).
//!
//! Problem:  min_p Σ p_i log p_i − ⟨x, p⟩  s.t.  0 ≤ p_i ≤ 1,  Σp = k,   0 < k ≤ m.
//! KKT: log p_i + 1 − x_i + τ + ν_i = 0, ν_i ≥ 0 for p_i ≤ 1, so p_i = min(1, exp(x_i − c)).
//! If the j largest entries are capped, Σ_{i>j} exp(x_[i] − c) = k − j gives
//!     c_j = log Σ_{i>j} exp(x_[i]) − log(k − j),
//! valid iff x_[j] ≥ c_j (capped) and x_[j+1] ≤ c_j (uncapped); the smallest such j is
//! the solution (j < k). The tail log-sum-exps are accumulated from the smallest kept
//! entry upwards in the log domain (no "total − prefix" cancellation, no overflow).

use super::prefix::{check_output, Param, Sum, Workspace, Written};
use super::Thresholds;
use crate::real::Real;
use crate::{Error, Result};

#[inline]
fn log_add_exp(a: f64, b: f64) -> f64 {
    if a == f64::NEG_INFINITY {
        return b;
    }
    if b == f64::NEG_INFINITY {
        return a;
    }
    let (hi, lo) = if a >= b { (a, b) } else { (b, a) };
    hi + (lo - hi).exp().ln_1p()
}

/// Projects `x` onto the (n,k)-simplex in KL divergence, writing `out`.
/// Returns c as `Thresholds::lower` (p = min(1, exp((x − shift) − c))), `upper` = 1.
pub fn capped_simplex_entropy<T: Real>(x: &[T], k: f64, out: &mut [T], ws: &mut Workspace) -> Result<Thresholds> {
    super::check_row(x, out)?;
    super::capped_simplex::check_capped_k(k, x.len())?;
    super::prefix::check_resolved("capped_simplex_entropy", "k", k)?;
    let m = x.len();
    if k == m as f64 {
        // The whole cube corner: every p_i = 1.
        out.iter_mut().for_each(|o| *o = T::from_f64(1.0));
        return Ok(Thresholds { shift: 0.0, lower: f64::NEG_INFINITY, upper: 1.0 });
    }
    let kept = (k.ceil() as usize).min(m);
    // Raw values: the log-sum-exps below are shift-invariant, and the threshold is
    // finally taken relative to an entry (the pivot), which no shift by the row maximum
    // could make exact next to entries ~1e300.
    let values = &mut ws.values;
    values.clear();
    values.extend(x.iter().map(|v| v.to_f64()));
    let descending = |a: &f64, b: &f64| b.total_cmp(a);
    if kept < m {
        values.select_nth_unstable_by(kept - 1, descending);
    }
    let (top, rest) = values.split_at_mut(kept);
    top.sort_unstable_by(descending);
    // tails[j] = log Σ_{i ≥ j} exp(x_[i]) over the whole row (0-based ranks).
    // Kept as rest_max and Σ exp(v − rest_max): their log-sum rest_max + log(·) rounds
    // by an ulp of rest_max (1e300), their ratio to a pivot does not.
    let rest_max = rest.iter().fold(f64::NEG_INFINITY, |a, &v| a.max(v));
    let rest_sum = rest.iter().map(|&v| (v - rest_max).exp()).sum::<f64>();
    let rest_lse = if rest.is_empty() { f64::NEG_INFINITY } else { rest_max + rest_sum.ln() };
    let tails = &mut ws.prefix_sums;
    tails.clear();
    tails.resize(kept + 1, f64::NEG_INFINITY);
    tails[kept] = rest_lse;
    for j in (0..kept).rev() {
        tails[j] = log_add_exp(top[j], tails[j + 1]);
    }
    // Candidates j from comparisons up to the rounding of c_j (a few ulps per
    // accumulated term, relative to the numbers compared); each is then solved again
    // relative to its pivot x_[j+1] and kept only if that solution is consistent.
    let slack = |j: usize| 4.0 * (j + 2) as f64 * f64::EPSILON;
    let mut threshold = None;
    for j in 0..kept {
        if (j as f64) >= k {
            break;
        }
        let at_most = |a: f64, b: f64| a <= b + slack(j) * a.abs().max(b.abs()).max(1.0);
        let c = tails[j] - (k - j as f64).ln();
        let capped_ok = j == 0 || at_most(c, top[j - 1]);
        if !(capped_ok && at_most(top[j], c)) {
            continue;
        }
        // c − pivot = log Σ_{rank ≥ j} exp(x_i − pivot) − log(k − j): terms in (0, 1], one
        // of them 1, so no overflow and γ_m of relative rounding in the sum.
        let pivot = top[j];
        let rest_mass = if rest.is_empty() { 0.0 } else { (rest_max - pivot).exp() * rest_sum };
        let mass = top[j..].iter().map(|&v| (v - pivot).exp()).sum::<f64>() + rest_mass;
        let lower = mass.ln() - (k - j as f64).ln();
        let err = 4.0 * (m as f64 + 4.0) * f64::EPSILON;
        // p_pivot = exp(−lower) ≤ 1, and the capped entries at or above the threshold.
        if lower >= -err && (j == 0 || (top[j - 1] - pivot) - lower >= -err) {
            threshold = Some((j, pivot, lower));
            break;
        }
    }
    let (j, pivot, lower) = threshold.ok_or_else(|| {
        Error::no_solution("capped_simplex_entropy", format!("no capped count j < k = {k} is consistent"))
    })?;
    // The j largest are capped by rank, not by the sign of x − c: a j accepted within
    // the tolerance must not leave a "capped" entry at exp(−tiny) < 1.
    let cap_value = if j > 0 { top[j - 1] } else { f64::INFINITY };
    let mut total = 0.0;
    for (o, &v) in out.iter_mut().zip(x) {
        let v = v.to_f64();
        let p = if v >= cap_value { 1.0 } else { ((v - pivot) - lower).exp().min(1.0) };
        let stored = T::from_f64(p);
        total += stored.to_f64();
        *o = stored;
    }
    let written = Written { total, fits: true };
    check_output("capped_simplex_entropy", out, 0.0, written, Sum::Equal(k), Param { name: "k", value: k }).or_else(
        |err| {
            // p·|log p| ≤ 1/e: the weight of the exponent's rounding in each entry (a pass of
            // logarithms, only for a sum outside the threshold projections' bound).
            let entropy: f64 = out.iter().map(|p| p.to_f64()).filter(|&p| p > 0.0).map(|p| -p * p.ln()).sum();
            if (total - k).abs() <= entropy_tolerance(m, k, lower, entropy) {
                Ok(())
            } else {
                Err(err)
            }
        },
    )?;
    Ok(Thresholds { shift: pivot, lower, upper: 1.0 })
}

/// The rounding of the entropic projection's output sum beyond the threshold
/// projections' [`super::prefix::output_tolerance`], which covers the sums and the
/// output type: each uncapped p_i = exp((x_i − pivot) − c) is computed from an exponent
/// rounded by ≤ u(|x_i − pivot| + |c|) + (error of c), where c = log S − log(k − j)
/// carries γ_m + 2u from the sum S of m terms in (0, 1]; exp turns an absolute error e
/// of the exponent into a relative one of ≤ e(1 + e) + u. With |x_i − pivot − c| =
/// |log p_i|: Σ_i p_i·(u|log p_i| + 2u|c| + γ_m + 3u) ≤ u·H + (2u|c| + γ_{m+3})·k,
/// H = −Σ p_i log p_i ≤ m/e. Doubled for the second-order terms.
fn entropy_tolerance(m: usize, k: f64, lower: f64, entropy: f64) -> f64 {
    super::prefix::output_tolerance(m, k, k, 0.0)
        + 2.0 * f64::EPSILON * (entropy + k * (2.0 * lower.abs() + m as f64 + 4.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn k1_is_softmax_and_caps_apply() {
        let x = [1.0f64, 2.0, 3.0];
        let mut out = [0.0; 3];
        capped_simplex_entropy(&x, 1.0, &mut out, &mut Workspace::new()).unwrap();
        let z: f64 = x.iter().map(|v| v.exp()).sum();
        for (o, v) in out.iter().zip(x) {
            assert!((o - v.exp() / z).abs() < 1e-15);
        }
        capped_simplex_entropy(&[1000.0, 0.0, 0.0], 2.0, &mut out, &mut Workspace::new()).unwrap();
        // Scale 1000: rounding of the threshold is ~1e-13.
        assert!((out[0] - 1.0).abs() < 1e-12 && (out[1] - 0.5).abs() < 1e-12, "{out:?}");
    }

    /// Entries of 1e300 next to the largest float: shifted by the row maximum, both
    /// 1e300 entries rounded onto the threshold and got 1 each (Σp = 3 for k = 2).
    #[test]
    fn huge_entries_keep_the_sum() {
        let mut x = vec![1.175494351e-38f64; 30];
        x[..4].copy_from_slice(&[f64::MAX, 1e300, 1e300, 3.36e16]);
        let mut out = vec![0.0; 30];
        capped_simplex_entropy(&x, 2.0, &mut out, &mut Workspace::new()).unwrap();
        assert_eq!(&out[..4], &[1.0, 0.5, 0.5, 0.0]);
        assert_eq!(out.iter().sum::<f64>(), 2.0);
    }
}
