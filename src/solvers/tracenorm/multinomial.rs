//! The data term of trace-norm multinomial logistic regression (Harchaoui et al. (2)–(3))
//! as a function of the scores S = X W + 1 bᵀ (n × m):
//!   R_n = (1/n) Σ_i log(1 + Σ_{l ≠ y_i} exp(s_il − s_iy_i)) = (1/n) Σ_i (logsumexp(s_i) − s_iy_i),
//! its gradient in S, (P − Y)/n with P the row-wise softmax of S (so ∇_W R_n = Xᵀ(P − Y)/n
//! and ∇_b R_n = 1ᵀ(P − Y)/n), and the line search of rank-one descent along a direction
//! δ·u vᵀ, whose scores move by δ·z vᵀ with z = X u.
//!
//! With sample weights w_i the mean becomes the weighted mean, R_n = Σ_i c_i loss_i with
//! c_i = w_i / Σ_j w_j (so weight 2 is the row duplicated, and the residual is
//! c_i (p_i − y_i)); [`row_weights`] checks and normalises them, and keeps no weights when
//! they are all equal, so that uniform weights run the unweighted code bit for bit.
//!
//! Rows are processed in parallel in fixed blocks and the block sums added in order, so
//! values do not depend on the thread count.

use rayon::prelude::*;

use crate::kernels::vexp::exp_nonpos_slice;
use crate::vector_code::widest_vector_code;

use crate::{Error, Result};

pub(crate) const BLOCK_ROWS: usize = 512;

/// Scores and labels of one evaluation: S (n × m, row-major) and y_i < m, with the rows'
/// normalised weights c_i (None: the plain mean, c_i = 1/n).
#[derive(Debug, Clone, Copy)]
pub struct Scores<'a> {
    pub values: &'a [f64],
    pub m: usize,
    pub labels: &'a [u32],
    pub weights: Option<&'a [f64]>,
}

impl<'a> Scores<'a> {
    pub fn new(values: &'a [f64], m: usize, labels: &'a [u32]) -> Result<Self> {
        Self::weighted(values, m, labels, None)
    }

    /// With the normalised weights c_i of [`row_weights`].
    pub fn weighted(values: &'a [f64], m: usize, labels: &'a [u32], weights: Option<&'a [f64]>) -> Result<Self> {
        check_labels(labels, m)?;
        if labels.len().checked_mul(m) != Some(values.len()) {
            return Err(Error::input("scores", format!("must hold {} x {m} values", labels.len())));
        }
        check_weights_len(weights, labels.len())?;
        Ok(Self { values, m, labels, weights })
    }

    fn n(&self) -> usize {
        self.labels.len()
    }

    /// Sum over the rows of f(s_i, y_i, i).
    #[cfg(test)]
    fn block_sum(&self, f: impl Fn(&[f64], usize, usize) -> f64 + Sync) -> f64 {
        row_sum(self.values, self.m, self.labels, f)
    }
}

/// Σ_i c_i f(row_i, y_i, i) over the rows: (1/n) Σ_i f without weights (the division
/// after the sum, as ever), the weighted sum with them.
fn mean_over_rows(
    values: &[f64],
    m: usize,
    labels: &[u32],
    weights: Option<&[f64]>,
    f: impl Fn(&[f64], usize, usize) -> f64 + Sync,
) -> f64 {
    match weights {
        None => row_sum(values, m, labels, f) / labels.len() as f64,
        Some(c) => row_sum(values, m, labels, |row, y, i| if c[i] == 0.0 { 0.0 } else { c[i] * f(row, y, i) }),
    }
}

/// The normalised weights c_i = w_i / Σ_j w_j of the sample weights w (n values, finite,
/// ≥ 0, not all 0), or None when they are all equal (the plain mean: uniform weights leave
/// every computation unchanged bit for bit).
pub fn row_weights(sample_weight: &[f64], n: usize) -> Result<Option<Vec<f64>>> {
    if sample_weight.len() != n {
        return Err(Error::input(
            "sample_weight",
            format!("must hold one weight per example ({n}), got {}", sample_weight.len()),
        ));
    }
    if sample_weight.iter().any(|w| !(w.is_finite() && *w >= 0.0)) {
        return Err(Error::input("sample_weight", "must be finite and >= 0"));
    }
    let total: f64 = sample_weight.iter().sum();
    if !(total > 0.0 && total.is_finite()) {
        return Err(Error::input("sample_weight", "every example has weight 0 (or the weights' sum overflows)"));
    }
    if sample_weight.iter().all(|&w| w == sample_weight[0]) {
        return Ok(None);
    }
    Ok(Some(sample_weight.iter().map(|&w| w / total).collect()))
}

pub(crate) fn check_weights_len(weights: Option<&[f64]>, n: usize) -> Result<()> {
    match weights {
        Some(c) if c.len() != n => {
            Err(Error::input("sample_weight", format!("must hold one weight per example ({n}), got {}", c.len())))
        }
        _ => Ok(()),
    }
}

/// Σ_i f(row_i, y_i, i) over the rows of an n × m array, in parallel in fixed blocks whose
/// sums are added in order (so the value does not depend on the thread count).
fn row_sum(values: &[f64], m: usize, labels: &[u32], f: impl Fn(&[f64], usize, usize) -> f64 + Sync) -> f64 {
    let sums: Vec<f64> = values
        .par_chunks(BLOCK_ROWS * m)
        .enumerate()
        .map(|(block, rows)| {
            rows.chunks_exact(m)
                .enumerate()
                .map(|(r, row)| {
                    let i = block * BLOCK_ROWS + r;
                    f(row, labels[i] as usize, i)
                })
                .sum()
        })
        .collect();
    sums.iter().sum()
}

/// At least one example, at least two classes, every y_i < m.
pub(crate) fn check_labels(labels: &[u32], m: usize) -> Result<()> {
    if m < 2 {
        return Err(Error::input("y", "needs at least two classes"));
    }
    if labels.is_empty() {
        return Err(Error::input("y", "needs at least one example"));
    }
    if labels.iter().any(|&y| y as usize >= m) {
        return Err(Error::input("y", format!("labels must be in 0..{m}")));
    }
    Ok(())
}

/// log Σ_l exp(s_l), stable.
#[inline]
fn log_sum_exp(s: &[f64]) -> f64 {
    let top = s.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    top + s.iter().map(|&v| (v - top).exp()).sum::<f64>().ln()
}

pub(crate) fn finite(value: f64, what: &str) -> Result<f64> {
    if value.is_finite() {
        Ok(value)
    } else {
        Err(Error::no_solution(
            "multinomial loss",
            format!("the {what} is not finite (diverging or non-finite scores)"),
        ))
    }
}

/// R_n(S).
pub fn loss(scores: &Scores<'_>) -> Result<f64> {
    let Scores { values, m, labels, weights } = *scores;
    finite(mean_over_rows(values, m, labels, weights, |s, y, _| log_sum_exp(s) - s[y]), "loss")
}

/// R_n(S) and the residual (P − Y)/n (c_i (p_i − y_i) with weights) written into
/// `residual` (n × m).
pub fn loss_and_residual(scores: &Scores<'_>, residual: &mut [f64]) -> Result<f64> {
    let (n, m) = (scores.n(), scores.m);
    if residual.len() != n * m {
        return Err(Error::input("residual", format!("must hold {n} x {m} values")));
    }
    let inv_n = 1.0 / n as f64;
    let sums: Vec<f64> = scores
        .values
        .par_chunks(BLOCK_ROWS * m)
        .zip(residual.par_chunks_mut(BLOCK_ROWS * m))
        .enumerate()
        .map(|(block, (rows, out))| {
            let (first, count) = (block * BLOCK_ROWS, rows.len() / m);
            let weights = scores.weights.map(|c| &c[first..first + count]);
            block_loss_and_residual(rows, &scores.labels[first..first + count], m, (inv_n, weights), out)
        })
        .collect();
    finite(scale_total(sums.iter().sum::<f64>(), inv_n, scores.weights), "loss")
}

/// The data term from the sum of [`block_loss_and_residual`]'s block totals: times 1/n
/// without weights, already weighted with them.
pub(crate) fn scale_total(total: f64, inv_n: f64, weights: Option<&[f64]>) -> f64 {
    if weights.is_some() {
        total
    } else {
        total * inv_n
    }
}

/// Lanes of the row reductions below: independent partial maxima and sums, so that the
/// loops vectorise (a single running sum is one long dependency chain; measured: the
/// softmax of 20,000 × 50 scores took 1.9 ms with it).
const LANES: usize = 8;

widest_vector_code! {
    /// exp(s_il − max_l s_il) of a block of rows into `out`, and the rows' maxima into
    /// `tops`. A NaN score is skipped by the maximum and makes its row's sum NaN, which the
    /// callers' finiteness checks report.
    fn shifted_exp_rows(rows: &[f64], m: usize, out: &mut [f64], tops: &mut [f64]) -> () {
        for ((s, o), top) in rows.chunks_exact(m).zip(out.chunks_exact_mut(m)).zip(tops.iter_mut()) {
            let mut lanes = [f64::NEG_INFINITY; LANES];
            let mut chunks = s.chunks_exact(LANES);
            for chunk in &mut chunks {
                for (lane, &v) in lanes.iter_mut().zip(chunk) {
                    *lane = if v > *lane { v } else { *lane };
                }
            }
            let mut largest = lanes.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            for &v in chunks.remainder() {
                largest = if v > largest { v } else { largest };
            }
            *top = largest;
            o.iter_mut().zip(s).for_each(|(o, &v)| *o = v - largest);
        }
        exp_nonpos_slice(out);
    }
}

widest_vector_code! {
    /// Σ_l x_l of every row of a block into `sums`, lane-wise.
    fn row_sums(rows: &[f64], m: usize, sums: &mut [f64]) -> () {
        for (x, sum) in rows.chunks_exact(m).zip(sums.iter_mut()) {
            let mut lanes = [0.0; LANES];
            let mut chunks = x.chunks_exact(LANES);
            for chunk in &mut chunks {
                lanes.iter_mut().zip(chunk).for_each(|(lane, &v)| *lane += v);
            }
            *sum = lanes.iter().sum::<f64>() + chunks.remainder().iter().sum::<f64>();
        }
    }
}

/// exp(s_il − max_l s_il) of a block of rows into `out`; returns the rows' maxima and the
/// rows' sums of `out`.
fn shifted_exp(rows: &[f64], m: usize, out: &mut [f64]) -> (Vec<f64>, Vec<f64>) {
    let count = rows.len() / m;
    let (mut tops, mut sums) = (vec![0.0; count], vec![0.0; count]);
    shifted_exp_rows(rows, m, out, &mut tops);
    row_sums(out, m, &mut sums);
    (tops, sums)
}

/// Σ over a block of rows of (logsumexp(s_i) − s_iy_i), and (P − Y)/n of those rows
/// written into `out` (same shape as `rows`); with the block's weights c_i (`scale`'s
/// second part), Σ c_i (logsumexp(s_i) − s_iy_i) and c_i (p_i − y_i) instead.
pub(crate) fn block_loss_and_residual(
    rows: &[f64],
    labels: &[u32],
    m: usize,
    (inv_n, weights): (f64, Option<&[f64]>),
    out: &mut [f64],
) -> f64 {
    let (tops, sums) = shifted_exp(rows, m, out);
    let mut total = 0.0;
    for (i, ((((s, o), &top), &sum), &y)) in
        rows.chunks_exact(m).zip(out.chunks_exact_mut(m)).zip(&tops).zip(&sums).zip(labels).enumerate()
    {
        let y = y as usize;
        let c = match weights {
            None => {
                total += top + sum.ln() - s[y];
                inv_n
            }
            // A zero weight ignores its row, whatever it holds.
            Some(c) if c[i] == 0.0 => 0.0,
            Some(c) => {
                total += c[i] * (top + sum.ln() - s[y]);
                c[i]
            }
        };
        let scale = c / sum;
        o.iter_mut().for_each(|o| *o *= scale);
        o[y] -= c;
    }
    total
}

/// The row-wise softmax P of scores S, which the line search reads once per trial
/// instead of recomputing each row's log-sum-exp (computed in blocks with the vectorised
/// exp).
#[derive(Debug, Clone)]
pub struct Softmax<'a> {
    probabilities: Vec<f64>,
    m: usize,
    labels: &'a [u32],
    weights: Option<&'a [f64]>,
}

impl<'a> Softmax<'a> {
    pub fn of(scores: &Scores<'a>) -> Self {
        let m = scores.m;
        let mut probabilities = vec![0.0; scores.values.len()];
        probabilities.par_chunks_mut(BLOCK_ROWS * m).zip(scores.values.par_chunks(BLOCK_ROWS * m)).for_each(
            |(out, rows)| {
                let (_, sums) = shifted_exp(rows, m, out);
                for (o, sum) in out.chunks_exact_mut(m).zip(sums) {
                    let scale = 1.0 / sum;
                    o.iter_mut().for_each(|o| *o *= scale);
                }
            },
        );
        Self { probabilities, m, labels: scores.labels, weights: scores.weights }
    }

    /// Σ_i c_i f(p_i, y_i, i) over the rows (the mean without weights).
    fn mean(&self, f: impl Fn(&[f64], usize, usize) -> f64 + Sync) -> f64 {
        mean_over_rows(&self.probabilities, self.m, self.labels, self.weights, f)
    }

    /// R_n(S + δ z vᵀ) − R_n(S), accurate to its own relative precision however small: per
    /// row, log Σ_l p_l exp(δ z_i v_l) − δ z_i v_y = log1p(Σ_l p_l expm1(δ z_i v_l)) − δ z_i v_y,
    /// instead of a difference of two O(1) losses (which loses every digit once the change
    /// is below 1e-16 of the loss, as it is near the optimum).
    pub fn loss_change_along(&self, z: &[f64], v: &[f64], delta: f64) -> Result<f64> {
        let change = self.mean(|p, y, i| {
            let step = delta * z[i];
            let moved: f64 = p.iter().zip(v).map(|(&p, &v)| p * (step * v).exp_m1()).sum();
            moved.ln_1p() - step * v[y]
        });
        finite(change, "loss change")
    }

    /// d²/dδ² R_n(S + δ z vᵀ) at δ = 0: (1/n) Σ_i z_i² (Σ_l p_il v_l² − (Σ_l p_il v_l)²)
    /// (Σ_i c_i … with weights).
    pub fn curvature_along(&self, z: &[f64], v: &[f64]) -> f64 {
        self.mean(|p, _, i| {
            let (mut mean, mut second) = (0.0, 0.0);
            for (&p, &v) in p.iter().zip(v) {
                mean += p * v;
                second += p * v * v;
            }
            z[i] * z[i] * (second - mean * mean).max(0.0)
        })
    }
}

/// A rank-one direction u vᵀ as the line search sees it: z = X u, v, and uᵀWv.
#[derive(Debug, Clone, Copy)]
pub struct Direction<'a> {
    pub z: &'a [f64],
    pub v: &'a [f64],
    pub u_w_v: f64,
}

/// λ1 (trace norm) and λ2 (squared Frobenius norm) of the objective (4).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Penalties {
    pub trace: f64,
    pub fro: f64,
}

/// The result of [`armijo_rank_one`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LineStep {
    pub delta: f64,
    /// R_n at the accepted step.
    pub loss: f64,
    /// Trial points evaluated.
    pub trials: usize,
}

/// Armijo line search along W + δ u vᵀ (‖u‖ = ‖v‖ = 1, δ ≥ 0) of
///   φ(δ) = λ1 (‖θ‖₁ + δ) + λ2 ‖W + δ u vᵀ‖² + R_n(S + δ z vᵀ),
/// where ‖W + δ u vᵀ‖² = ‖W‖² + 2δ uᵀWv + δ². `slope` is φ'(0) < 0 (g_t of Algorithm R1D);
/// `u_w_v` is uᵀWv and `loss0` is R_n(S). The first trial is the Newton step
/// −φ'(0)/φ''(0) (exact curvature of the data term at 0), halved until
/// φ(δ) ≤ φ(0) + 10⁻⁴ δ φ'(0).
pub fn armijo_rank_one(
    scores: &Scores<'_>,
    direction: &Direction<'_>,
    penalties: Penalties,
    loss0: f64,
    slope: f64,
) -> Result<LineStep> {
    let Direction { z, v, u_w_v } = *direction;
    let Penalties { trace: lambda_trace, fro: lambda_fro } = penalties;
    if z.len() != scores.n() || v.len() != scores.m {
        return Err(Error::input("direction", "z must have n values and v m values"));
    }
    if slope >= 0.0 || slope.is_nan() {
        return Err(Error::input("slope", format!("must be negative (a descent direction), got {slope}")));
    }
    let softmax = Softmax::of(scores);
    let curvature = softmax.curvature_along(z, v) + 2.0 * lambda_fro;
    let mut delta = if curvature > 0.0 { -slope / curvature } else { 1.0 };
    for trials in 1..=60 {
        let loss_change = softmax.loss_change_along(z, v, delta)?;
        let change = lambda_trace * delta + lambda_fro * (2.0 * delta * u_w_v + delta * delta) + loss_change;
        if change <= 1e-4 * delta * slope {
            return Ok(LineStep { delta, loss: loss0 + loss_change, trials });
        }
        delta *= 0.5;
    }
    Err(Error::no_solution(
        "multinomial loss",
        "the line search found no decrease along the top singular pair (slope too small for the precision)",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;

    /// R_n(S + δ z vᵀ), directly (the reference for `loss_change_along`).
    fn loss_along(scores: &Scores<'_>, z: &[f64], v: &[f64], delta: f64) -> Result<f64> {
        let mut row = vec![0.0; scores.m];
        let total: Vec<f64> = scores
            .values
            .par_chunks(BLOCK_ROWS * scores.m)
            .enumerate()
            .map_init(
                || row.clone(),
                |row, (block, rows)| {
                    let mut total = 0.0;
                    for (r, s) in rows.chunks_exact(scores.m).enumerate() {
                        let i = block * BLOCK_ROWS + r;
                        let step = delta * z[i];
                        row.iter_mut().zip(s.iter().zip(v)).for_each(|(t, (&s, &v))| *t = s + step * v);
                        total += log_sum_exp(row) - row[scores.labels[i] as usize];
                    }
                    total
                },
            )
            .collect();
        row.clear();
        finite(total.iter().sum::<f64>() / scores.n() as f64, "loss")
    }

    /// d/dδ R_n(S + δ z vᵀ) at 0: (1/n) Σ_i z_i (Σ_l p_il v_l − v_y_i).
    fn data_slope(scores: &Scores<'_>, z: &[f64], v: &[f64]) -> f64 {
        let total = scores.block_sum(|s, y, i| {
            let lse = log_sum_exp(s);
            let mean: f64 = s.iter().zip(v).map(|(&s, &v)| (s - lse).exp() * v).sum();
            z[i] * (mean - v[y])
        });
        total / scores.n() as f64
    }

    fn problem(n: usize, m: usize, seed: u64) -> (Vec<f64>, Vec<u32>, Vec<f64>, Vec<f64>) {
        let mut rng = SplitMix64::new(seed);
        let s = (0..n * m).map(|_| 4.0 * rng.next_f64() - 2.0).collect();
        let y = (0..n).map(|i| (i % m) as u32).collect();
        let z = (0..n).map(|_| rng.next_f64() - 0.5).collect();
        let mut v: Vec<f64> = (0..m).map(|_| rng.next_f64() - 0.5).collect();
        let norm = v.iter().map(|x| x * x).sum::<f64>().sqrt();
        v.iter_mut().for_each(|x| *x /= norm);
        (s, y, z, v)
    }

    #[test]
    fn residual_is_the_gradient_in_the_scores() {
        let (n, m) = (1100, 7);
        let (s, y, _, _) = problem(n, m, 1);
        let scores = Scores::new(&s, m, &y).unwrap();
        let mut r = vec![0.0; n * m];
        let f = loss_and_residual(&scores, &mut r).unwrap();
        assert!((f - loss(&scores).unwrap()).abs() < 1e-14);
        for idx in [0, 5, 3001, n * m - 1] {
            let h = 1e-6;
            let (mut up, mut down) = (s.clone(), s.clone());
            up[idx] += h;
            down[idx] -= h;
            let fd = (loss(&Scores::new(&up, m, &y).unwrap()).unwrap()
                - loss(&Scores::new(&down, m, &y).unwrap()).unwrap())
                / (2.0 * h);
            assert!((fd - r[idx]).abs() < 1e-9, "{idx}: {fd} vs {}", r[idx]);
        }
    }

    #[test]
    fn weight_two_is_the_row_duplicated_and_weights_are_checked() {
        let (n, m) = (600, 4);
        let (s, y, z, v) = problem(n, m, 4);
        let w: Vec<f64> = (0..n).map(|i| (i % 3) as f64).collect();
        let c = row_weights(&w, n).unwrap().unwrap();
        // The duplicated problem: row i repeated w_i times.
        let (mut sd, mut yd, mut zd) = (Vec::new(), Vec::new(), Vec::new());
        for i in 0..n {
            for _ in 0..w[i] as usize {
                sd.extend_from_slice(&s[i * m..(i + 1) * m]);
                yd.push(y[i]);
                zd.push(z[i]);
            }
        }
        let weighted = Scores::weighted(&s, m, &y, Some(&c)).unwrap();
        let duplicated = Scores::new(&sd, m, &yd).unwrap();
        let (mut r, mut rd) = (vec![0.0; n * m], vec![0.0; sd.len()]);
        let f = loss_and_residual(&weighted, &mut r).unwrap();
        assert!((f - loss_and_residual(&duplicated, &mut rd).unwrap()).abs() < 1e-13);
        assert!((f - loss(&weighted).unwrap()).abs() < 1e-14);
        // Residual rows: c_i (p_i − y_i), which sum over the copies to the duplicated ones.
        let mut at = 0;
        for i in 0..n {
            for l in 0..m {
                let copies: f64 = (0..w[i] as usize).map(|k| rd[(at + k) * m + l]).sum();
                assert!((r[i * m + l] - copies).abs() < 1e-15, "row {i}");
            }
            at += w[i] as usize;
        }
        let (soft, soft_d) = (Softmax::of(&weighted), Softmax::of(&duplicated));
        assert!((soft.curvature_along(&z, &v) - soft_d.curvature_along(&zd, &v)).abs() < 1e-13);
        let change = soft.loss_change_along(&z, &v, 0.2).unwrap();
        assert!((change - soft_d.loss_change_along(&zd, &v, 0.2).unwrap()).abs() < 1e-13);
        // Uniform weights are no weights; bad ones are refused naming sample_weight.
        assert!(row_weights(&[0.3; 5], 5).unwrap().is_none());
        for bad in [vec![1.0, -1.0], vec![1.0, f64::NAN], vec![0.0, 0.0], vec![1.0]] {
            let err = row_weights(&bad, 2).unwrap_err().to_string();
            assert!(err.starts_with("sample_weight:"), "{bad:?}: {err}");
        }
    }

    #[test]
    fn slope_and_curvature_match_finite_differences() {
        let (n, m) = (700, 5);
        let (s, y, z, v) = problem(n, m, 2);
        let scores = Scores::new(&s, m, &y).unwrap();
        let softmax = Softmax::of(&scores);
        let h = 1e-4;
        let (fp, f0, fm) =
            (loss_along(&scores, &z, &v, h).unwrap(), loss(&scores).unwrap(), loss_along(&scores, &z, &v, -h).unwrap());
        assert!(((fp - fm) / (2.0 * h) - data_slope(&scores, &z, &v)).abs() < 1e-8);
        assert!(((fp - 2.0 * f0 + fm) / (h * h) - softmax.curvature_along(&z, &v)).abs() < 1e-5);
        for delta in [0.3, -1e-3, 1e-9] {
            let change = softmax.loss_change_along(&z, &v, delta).unwrap();
            assert!((change - (loss_along(&scores, &z, &v, delta).unwrap() - f0)).abs() < 1e-14);
        }
        // Far below the loss's own precision the change is still first-order exact.
        let tiny = 1e-13;
        let change = softmax.loss_change_along(&z, &v, tiny).unwrap();
        assert!(
            (change / tiny - data_slope(&scores, &z, &v)).abs() < 1e-9 * data_slope(&scores, &z, &v).abs().max(1e-3)
        );
    }

    #[test]
    fn armijo_decreases_the_objective() {
        let (n, m) = (500, 4);
        let (s, y, z, v) = problem(n, m, 3);
        let scores = Scores::new(&s, m, &y).unwrap();
        let (lambda_trace, lambda_fro, u_w_v) = (1e-3, 1e-2, 0.3);
        let mut slope = lambda_trace + 2.0 * lambda_fro * u_w_v + data_slope(&scores, &z, &v);
        let (zz, vv) =
            if slope > 0.0 { (z.iter().map(|x| -x).collect::<Vec<_>>(), v.clone()) } else { (z.clone(), v.clone()) };
        let u_w_v = if slope > 0.0 { -u_w_v } else { u_w_v };
        slope = lambda_trace + 2.0 * lambda_fro * u_w_v + data_slope(&scores, &zz, &vv);
        assert!(slope < 0.0);
        let loss0 = loss(&scores).unwrap();
        let (direction, penalties) =
            (Direction { z: &zz, v: &vv, u_w_v }, Penalties { trace: lambda_trace, fro: lambda_fro });
        let step = armijo_rank_one(&scores, &direction, penalties, loss0, slope).unwrap();
        let change =
            lambda_trace * step.delta + lambda_fro * (2.0 * step.delta * u_w_v + step.delta.powi(2)) + step.loss
                - loss0;
        assert!(step.delta > 0.0 && change < 0.0);
        assert!(armijo_rank_one(&scores, &direction, penalties, loss0, 0.1).is_err());
    }
}
