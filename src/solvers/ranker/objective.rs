//! The training objective of the factorised ranker and its gradient.
//!
//! Model: scores over n labels z(x) = (x·U)·Vᵀ + b, with
//! U ∈ ℝ^{d×r} (feature factors), V ∈ ℝ^{n×r} (label factors), b ∈ ℝⁿ (label biases).
//! Objective over the rows I of a training set with positive label sets Y_i:
//!   F(U, V, b) = (1/P) Σ_{i∈I} L(z(x_i), Y_i) + (α/2)(‖U‖²_F + ‖V‖²_F),
//!   P = Σ_{i∈I} |Y_i|  (the number of (example, label) pairs),
//! with L from [`super::label_loss`]. Writing G = ∂L/∂Z row-wise (Z = H Vᵀ + 1bᵀ,
//! H = X U):
//!   ∂F/∂V = (1/P) Gᵀ H + αV,   ∂F/∂b = (1/P) Gᵀ1,   ∂F/∂U = (1/P) Xᵀ (G V) + αU.
//!
//! Parameters live in one flat vector θ = [U | V | b] (row-major), so an optimiser
//! treats them as one array. The data term is evaluated a minibatch at a time:
//! H by sparse row combinations, Z and the three products by dense blocks of labels
//! or rows, each block computed by one thread in a fixed summation order — so the
//! result is bit-for-bit the same for any number of threads. Score rows (and their
//! gradients) are formed for at most [`CHUNK_ELEMENTS`] / n rows at once: at n ≈ 10⁶
//! labels that caps them at 2 × 256 MB in f32, and still leaves ~64 rows per chunk, so
//! V is streamed a few times per minibatch rather than once per row (the products
//! stay compute-bound).

use ndarray::linalg::general_mat_mul;
use ndarray::{ArrayView2, ArrayViewMut2, Axis, LinalgScalar};
use rayon::prelude::*;

use super::label_loss::{label_loss, LabelLoss, LossScratch};
use crate::data::{Design, Row, RowBuf};
use crate::real::Real;
use crate::{Error, Result};

/// The element types of the parameters (f32 or f64).
pub trait Param: Real + LinalgScalar + Send + Sync {}
impl<T: Real + LinalgScalar + Send + Sync> Param for T {}

/// Labels per GEMM block: small enough to spread over threads, large enough to
/// amortise packing the minibatch's factors.
const LABEL_BLOCK: usize = 256;
/// Why a loss or score is not finite: the steps diverged, or X is too large for the
/// parameters' precision (the facade refuses rows whose squared norm overflows float32,
/// but smaller ones can still overflow a score).
pub(super) const SCORES_OVERFLOW: &str = "the scores overflow the model's precision (the steps diverged, or X's values are too large): lower learning_rate, or rescale X";
/// Batch rows per block of G·V.
const ROW_BLOCK: usize = 16;
/// Feature rows of U per block of Xᵀ(G V).
const FEATURE_BLOCK: usize = 64;
/// Score-matrix elements formed at once (256 MB in f32).
pub const CHUNK_ELEMENTS: usize = 1 << 26;

/// d, n and r.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    pub features: usize,
    pub labels: usize,
    pub components: usize,
}

impl Shape {
    pub fn new(features: usize, labels: usize, components: usize) -> Result<Self> {
        if features == 0 {
            return Err(Error::input("X", "needs at least one feature"));
        }
        if components == 0 {
            return Err(Error::param("n_components", "must be >= 1"));
        }
        let shape = Shape { features, labels, components };
        shape
            .features
            .checked_add(labels)
            .and_then(|v| v.checked_mul(components))
            .and_then(|v| v.checked_add(labels))
            .ok_or_else(|| Error::param("n_components", "the model does not fit in memory"))?;
        Ok(shape)
    }
    /// Length of θ = [U | V | b].
    pub fn parameters(&self) -> usize {
        (self.features + self.labels) * self.components + self.labels
    }
    /// Length of the regularised prefix [U | V].
    pub fn regularised(&self) -> usize {
        (self.features + self.labels) * self.components
    }
    fn split<'a, T>(&self, theta: &'a [T]) -> (&'a [T], &'a [T], &'a [T]) {
        let (u, rest) = theta.split_at(self.features * self.components);
        let (v, b) = rest.split_at(self.labels * self.components);
        (u, v, b)
    }
    fn split_mut<'a, T>(&self, theta: &'a mut [T]) -> (&'a mut [T], &'a mut [T], &'a mut [T]) {
        let (u, rest) = theta.split_at_mut(self.features * self.components);
        let (v, b) = rest.split_at_mut(self.labels * self.components);
        (u, v, b)
    }
}

/// The positive labels of every example, in CSR form (checked once).
#[derive(Debug, Clone, Copy)]
pub struct Labels<'a> {
    indptr: &'a [usize],
    indices: &'a [u32],
}

impl<'a> Labels<'a> {
    pub fn new(indptr: &'a [usize], indices: &'a [u32], n_rows: usize, n_labels: usize) -> Result<Self> {
        if indptr.len() != n_rows + 1
            || indptr[0] != 0
            || indptr[n_rows] != indices.len()
            || indptr.windows(2).any(|w| w[0] > w[1])
        {
            return Err(Error::input(
                "Y",
                format!("label pointers must be {} non-decreasing offsets from 0 to {}", n_rows + 1, indices.len()),
            ));
        }
        if indices.iter().any(|&y| y as usize >= n_labels) {
            return Err(Error::input("Y", format!("labels must lie in [0, {n_labels})")));
        }
        Ok(Self { indptr, indices })
    }
    pub fn row(&self, i: usize) -> &'a [u32] {
        &self.indices[self.indptr[i]..self.indptr[i + 1]]
    }
    /// Number of (example, label) pairs among `rows`.
    pub fn pairs(&self, rows: &[usize]) -> usize {
        rows.iter().map(|&i| self.indptr[i + 1] - self.indptr[i]).sum()
    }
}

/// Buffers reused across minibatches.
#[derive(Debug)]
pub struct Scratch<T> {
    /// The minibatch's nonzeros (feature, batch row, value), row by row.
    entries: Vec<(u32, u32, f64)>,
    row_ptr: Vec<usize>,
    hidden: Vec<T>,
    hidden_grad: Vec<T>,
    scores: Vec<T>,
    score_grad: Vec<T>,
    chunk_elements: usize,
}

impl<T: Param> Default for Scratch<T> {
    fn default() -> Self {
        Self::with_chunk_elements(CHUNK_ELEMENTS)
    }
}

impl<T: Param> Scratch<T> {
    /// Forms at most `elements` scores at once (tests use tiny chunks).
    pub fn with_chunk_elements(elements: usize) -> Self {
        Self {
            entries: Vec::new(),
            row_ptr: Vec::new(),
            hidden: Vec::new(),
            hidden_grad: Vec::new(),
            scores: Vec::new(),
            score_grad: Vec::new(),
            chunk_elements: elements,
        }
    }
}

fn view<T>(data: &[T], rows: usize, cols: usize) -> ArrayView2<'_, T> {
    ArrayView2::from_shape((rows, cols), &data[..rows * cols]).expect("buffer sized by the caller")
}

fn view_mut<T>(data: &mut [T], rows: usize, cols: usize) -> ArrayViewMut2<'_, T> {
    ArrayViewMut2::from_shape((rows, cols), &mut data[..rows * cols]).expect("buffer sized by the caller")
}

/// Adds ∂/∂θ of Σ_{i∈rows} L(z(x_i), Y_i) into `grad` (same layout as θ; the 1/P
/// and the regulariser are the caller's) and returns that sum.
#[allow(clippy::too_many_arguments)]
pub fn add_data_gradient<T: Param, D: Design>(
    x: &D,
    labels: &Labels<'_>,
    rows: &[usize],
    shape: Shape,
    theta: &[T],
    loss: LabelLoss,
    grad: &mut [T],
    scratch: &mut Scratch<T>,
) -> Result<f64> {
    let Shape { labels: n, components: r, .. } = shape;
    if shape.features != x.n_features() || theta.len() != shape.parameters() || grad.len() != shape.parameters() {
        return Err(Error::input(
            "theta",
            format!("parameters for {} features do not fit X with {}", shape.features, x.n_features()),
        ));
    }
    let batch = rows.len();
    let (u, v, b) = shape.split(theta);
    let (grad_u, grad_v, grad_b) = shape.split_mut(grad);
    let (zero, one) = (T::from_f64(0.0), T::from_f64(1.0));

    // The minibatch's rows as (feature, row, value) entries, then H = X_B U.
    scratch.entries.clear();
    scratch.row_ptr.clear();
    scratch.row_ptr.push(0);
    let mut buf = RowBuf::new();
    for (bi, &i) in rows.iter().enumerate() {
        match x.row(i, &mut buf) {
            Row::Dense(values) => scratch
                .entries
                .extend(values.iter().enumerate().filter(|(_, &v)| v != 0.0).map(|(j, &v)| (j as u32, bi as u32, v))),
            Row::Sparse { indices, values } => {
                scratch.entries.extend(indices.iter().zip(values).map(|(&j, &v)| (j, bi as u32, v)))
            }
        }
        scratch.row_ptr.push(scratch.entries.len());
    }
    scratch.hidden.clear();
    scratch.hidden.resize(batch * r, zero);
    let (entries, row_ptr) = (&scratch.entries, &scratch.row_ptr);
    scratch.hidden.par_chunks_mut(r).enumerate().for_each_init(
        || vec![0.0f64; r],
        |acc, (bi, h)| {
            acc.iter_mut().for_each(|a| *a = 0.0);
            for &(j, _, value) in &entries[row_ptr[bi]..row_ptr[bi + 1]] {
                let uj = &u[j as usize * r..(j as usize + 1) * r];
                acc.iter_mut().zip(uj).for_each(|(a, &w)| *a += value * w.to_f64());
            }
            h.iter_mut().zip(acc.iter()).for_each(|(h, &a)| *h = T::from_f64(a));
        },
    );

    let chunk = (scratch.chunk_elements / n.max(1)).clamp(1, batch.max(1));
    scratch.scores.resize(chunk * n, zero);
    scratch.score_grad.resize(chunk * n, zero);
    scratch.hidden_grad.clear();
    scratch.hidden_grad.resize(batch * r, zero);
    let v_all = view(v, n, r);
    let mut total = 0.0;
    for start in (0..batch).step_by(chunk) {
        let c = chunk.min(batch - start);
        let hidden = view(&scratch.hidden[start * r..], c, r);

        // Z = H_c Vᵀ, a block of labels per task.
        {
            let mut scores = view_mut(&mut scratch.scores, c, n);
            let blocks: Vec<_> = scores
                .axis_chunks_iter_mut(Axis(1), LABEL_BLOCK)
                .zip(v_all.axis_chunks_iter(Axis(0), LABEL_BLOCK))
                .collect();
            blocks.into_par_iter().for_each(|(mut zb, vb)| general_mat_mul(one, &hidden, &vb.t(), zero, &mut zb));
        }

        // Row losses (+ b), in parallel, summed in row order.
        let values: Vec<f64> = scratch.scores[..c * n]
            .par_chunks_mut(n)
            .zip(scratch.score_grad[..c * n].par_chunks_mut(n))
            .enumerate()
            .map_init(LossScratch::new, |ls, (t, (z, g))| {
                z.iter_mut().zip(b).for_each(|(z, &bias)| *z = *z + bias);
                // Scores beyond T's range are the model's doing (or X's scale), not the
                // caller's scores: the losses' own checks would blame `z`, and Rankmax's
                // sweep assumes finite scores.
                if z.iter().any(|v| !v.to_f64().is_finite()) {
                    return Err(Error::no_solution("ranker training", SCORES_OVERFLOW));
                }
                label_loss(loss, z, labels.row(rows[start + t]), g, ls).map_err(|e| match e {
                    Error::InvalidInput { name: "z", .. } => Error::no_solution("ranker training", SCORES_OVERFLOW),
                    other => other,
                })
            })
            .collect::<Result<_>>()?;
        total += values.iter().sum::<f64>();
        if !total.is_finite() {
            return Err(Error::no_solution("ranker training", SCORES_OVERFLOW));
        }

        let score_grad = view(&scratch.score_grad, c, n);
        // ∂V += Gᵀ H and ∂b += Gᵀ1, a block of labels per task.
        {
            let mut gv = view_mut(grad_v, n, r);
            let blocks: Vec<_> = gv
                .axis_chunks_iter_mut(Axis(0), LABEL_BLOCK)
                .zip(grad_b.chunks_mut(LABEL_BLOCK))
                .zip(score_grad.axis_chunks_iter(Axis(1), LABEL_BLOCK))
                .collect();
            blocks.into_par_iter().for_each(|((mut gvb, gbb), gb)| {
                general_mat_mul(one, &gb.t(), &hidden, one, &mut gvb);
                for row in gb.rows() {
                    gbb.iter_mut().zip(row).for_each(|(a, &g)| *a = *a + g);
                }
            });
        }
        // ∂H = G V, a block of rows per task.
        scratch.hidden_grad[start * r..(start + c) * r]
            .par_chunks_mut(ROW_BLOCK * r)
            .zip(scratch.score_grad[..c * n].par_chunks(ROW_BLOCK * n))
            .for_each(|(dh, g)| {
                let rows_here = dh.len() / r;
                general_mat_mul(one, &view(g, rows_here, n), &v_all, zero, &mut view_mut(dh, rows_here, r));
            });
    }

    // ∂U = X_Bᵀ ∂H: entries sorted by feature, a block of U's rows per task, each row
    // summed over the minibatch in row order.
    scratch.entries.sort_unstable_by_key(|&(j, bi, _)| (j, bi));
    let (entries, hidden_grad) = (&scratch.entries, &scratch.hidden_grad);
    grad_u.par_chunks_mut(FEATURE_BLOCK * r).enumerate().for_each(|(block, gu)| {
        let first = block * FEATURE_BLOCK;
        let lo = entries.partition_point(|e| (e.0 as usize) < first);
        let hi = entries.partition_point(|e| (e.0 as usize) < first + FEATURE_BLOCK);
        for &(j, bi, value) in &entries[lo..hi] {
            let value = T::from_f64(value);
            let row = j as usize - first;
            let target = &mut gu[row * r..(row + 1) * r];
            let source = &hidden_grad[bi as usize * r..(bi as usize + 1) * r];
            target.iter_mut().zip(source).for_each(|(t, &s)| *t = *t + value * s);
        }
    });
    Ok(total)
}

/// The checks of θ and the rows that an epoch and the objective share: θ holds the
/// shape's parameters, all finite (training would only spread NaN or infinity), and
/// every row lies in X's `n_rows`.
pub(super) fn check_theta_rows<T: Real>(theta: &[T], shape: Shape, rows: &[usize], n_rows: usize) -> Result<()> {
    let len = shape.parameters();
    if theta.len() != len {
        return Err(Error::input("theta", format!("must hold {len} values, got {}", theta.len())));
    }
    if let Some(at) = crate::batch::first_non_finite(theta) {
        return Err(Error::input("theta", format!("contains NaN or infinity (entry {at})")));
    }
    if let Some(&bad) = rows.iter().find(|&&i| i >= n_rows) {
        return Err(Error::input("rows", format!("row {bad} out of range [0, {n_rows})")));
    }
    Ok(())
}

/// F(θ) and ∇F(θ) over `rows` (the whole objective of the module docs), evaluated in
/// minibatches of `batch_size` rows.
#[allow(clippy::too_many_arguments)]
pub fn objective<T: Param, D: Design>(
    x: &D,
    labels: &Labels<'_>,
    rows: &[usize],
    shape: Shape,
    theta: &[T],
    loss: LabelLoss,
    alpha: f64,
    batch_size: usize,
) -> Result<(f64, Vec<T>)> {
    loss.check_labels(shape.labels)?;
    check_theta_rows(theta, shape, rows, x.n_rows())?;
    let mut grad = vec![T::from_f64(0.0); shape.parameters()];
    let mut scratch = Scratch::default();
    let mut data = 0.0;
    for batch in rows.chunks(batch_size.max(1)) {
        data += add_data_gradient(x, labels, batch, shape, theta, loss, &mut grad, &mut scratch)?;
    }
    let pairs = labels.pairs(rows);
    let inv = if pairs > 0 { 1.0 / pairs as f64 } else { 0.0 };
    let reg = shape.regularised();
    let mut penalty = 0.0;
    for (idx, (g, &w)) in grad.iter_mut().zip(theta).enumerate() {
        let w = w.to_f64();
        let mut value = g.to_f64() * inv;
        if idx < reg {
            value += alpha * w;
            penalty += w * w;
        }
        *g = T::from_f64(value);
    }
    Ok((data * inv + 0.5 * alpha * penalty, grad))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{CsrRows, DenseRows};
    use crate::rng::SplitMix64;

    struct Problem {
        x: Vec<f64>,
        indptr: Vec<usize>,
        indices: Vec<u32>,
        shape: Shape,
        theta: Vec<f64>,
    }

    fn problem(rows: usize, d: usize, n: usize, r: usize, seed: u64) -> Problem {
        let mut rng = SplitMix64::new(seed);
        let mut gauss = || (0..12).map(|_| rng.next_f64()).sum::<f64>() - 6.0;
        let x: Vec<f64> = (0..rows * d).map(|i| if i % 3 == 1 { 0.0 } else { gauss() }).collect();
        let shape = Shape::new(d, n, r).unwrap();
        let theta: Vec<f64> = (0..shape.parameters()).map(|_| 0.5 * gauss()).collect();
        let mut rng = SplitMix64::new(seed + 1);
        let (mut indptr, mut indices) = (vec![0], Vec::new());
        for i in 0..rows {
            // Row 2 has no labels at all: it must contribute nothing.
            let count = if i == 2 { 0 } else { 1 + rng.below(3) };
            indices.extend((0..count).map(|_| rng.below(n) as u32));
            indptr.push(indices.len());
        }
        Problem { x, indptr, indices, shape, theta }
    }

    fn losses(n: usize) -> Vec<LabelLoss> {
        vec![
            LabelLoss::Softmax,
            LabelLoss::Sparsemax,
            LabelLoss::Rankmax { k: 1, eta: 1.0 },
            LabelLoss::Rankmax { k: n / 2, eta: 0.5 },
        ]
    }

    /// θ, the rows and the loss are checked by the objective itself (the binding checked
    /// them before).
    #[test]
    fn the_objective_checks_its_arguments() {
        let (rows, d, n, r) = (4, 3, 5, 2);
        let p = problem(rows, d, n, r, 1);
        let x = DenseRows::new(&p.x, rows, d).unwrap();
        let labels = Labels::new(&p.indptr, &p.indices, rows, n).unwrap();
        let all: Vec<usize> = (0..rows).collect();
        let value = |theta: &[f64], rows: &[usize], loss| objective(&x, &labels, rows, p.shape, theta, loss, 0.1, 2);
        assert!(value(&p.theta, &all, LabelLoss::Softmax).is_ok());
        let error = |result: Result<(f64, Vec<f64>)>| result.unwrap_err().to_string();
        assert!(error(value(&p.theta[1..], &all, LabelLoss::Softmax)).starts_with("theta: must hold"));
        let mut nan = p.theta.clone();
        nan[3] = f64::NAN;
        assert!(error(value(&nan, &all, LabelLoss::Softmax)).starts_with("theta: contains NaN or infinity (entry 3)"));
        assert!(error(value(&p.theta, &[0, 4], LabelLoss::Softmax)).starts_with("rows: row 4 out of range"));
        assert!(error(value(&p.theta, &all, LabelLoss::Rankmax { k: n, eta: 1.0 })).starts_with("k: must satisfy"));
    }

    #[test]
    fn gradient_matches_central_differences() {
        let (rows, d, n, r) = (7, 5, 9, 3);
        let p = problem(rows, d, n, r, 5);
        let x = DenseRows::new(&p.x, rows, d).unwrap();
        let labels = Labels::new(&p.indptr, &p.indices, rows, n).unwrap();
        let all: Vec<usize> = (0..rows).collect();
        for loss in losses(n) {
            let (_, grad) = objective(&x, &labels, &all, p.shape, &p.theta, loss, 0.3, 3).unwrap();
            let h = 1e-6;
            for idx in 0..p.shape.parameters() {
                let mut plus = p.theta.clone();
                plus[idx] += h;
                let mut minus = p.theta.clone();
                minus[idx] -= h;
                let fp = objective(&x, &labels, &all, p.shape, &plus, loss, 0.3, 3).unwrap().0;
                let fm = objective(&x, &labels, &all, p.shape, &minus, loss, 0.3, 3).unwrap().0;
                let fd = (fp - fm) / (2.0 * h);
                assert!((fd - grad[idx]).abs() <= 1e-5 * (1.0 + fd.abs()), "{loss:?} θ[{idx}]: {fd} vs {}", grad[idx]);
            }
        }
    }

    #[test]
    fn bits_do_not_depend_on_threads_batches_chunks_or_layout() {
        let (rows, d, n, r) = (40, 6, 700, 8);
        let p = problem(rows, d, n, r, 9);
        let dense = DenseRows::new(&p.x, rows, d).unwrap();
        // The same matrix as CSR (explicit zeros dropped).
        let (mut indptr, mut cols, mut vals) = (vec![0i64], Vec::new(), Vec::new());
        for row in p.x.chunks(d) {
            for (j, &v) in row.iter().enumerate().filter(|(_, &v)| v != 0.0) {
                cols.push(j as i64);
                vals.push(v);
            }
            indptr.push(cols.len() as i64);
        }
        let csr = CsrRows::new(&indptr, &cols, &vals, d).unwrap();
        let labels = Labels::new(&p.indptr, &p.indices, rows, n).unwrap();
        let all: Vec<usize> = (0..rows).collect();
        for loss in losses(n) {
            let run = |threads: usize, chunk: usize, sparse: bool| {
                let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
                pool.install(|| {
                    let mut grad = vec![0.0; p.shape.parameters()];
                    let mut scratch = Scratch::with_chunk_elements(chunk);
                    let value = if sparse {
                        add_data_gradient(&csr, &labels, &all, p.shape, &p.theta, loss, &mut grad, &mut scratch)
                    } else {
                        add_data_gradient(&dense, &labels, &all, p.shape, &p.theta, loss, &mut grad, &mut scratch)
                    };
                    (value.unwrap(), grad)
                })
            };
            let reference = run(1, CHUNK_ELEMENTS, false);
            // Threads and the storage of X change no bit.
            for (threads, sparse) in [(2, false), (3, true)] {
                let other = run(threads, CHUNK_ELEMENTS, sparse);
                assert_eq!(reference.0.to_bits(), other.0.to_bits(), "{loss:?} {threads}");
                assert!(
                    reference.1.iter().zip(&other.1).all(|(a, b)| a.to_bits() == b.to_bits()),
                    "{loss:?} {threads}"
                );
            }
            // Score chunks (fixed by n, never by the thread count) only reorder the sums
            // over rows of ∂V and ∂b.
            for chunk in [1, 3 * n] {
                let one = run(1, chunk, false);
                let two = run(2, chunk, true);
                assert_eq!(one.0.to_bits(), two.0.to_bits());
                assert!(one.1.iter().zip(&two.1).all(|(a, b)| a.to_bits() == b.to_bits()));
                assert!(one.1.iter().zip(&reference.1).all(|(a, b)| (a - b).abs() <= 1e-12 * (1.0 + b.abs())));
            }
            // The sum over rows equals the sum over single-row batches (up to rounding).
            let mut grad = vec![0.0; p.shape.parameters()];
            let mut scratch = Scratch::default();
            let mut value = 0.0;
            for i in 0..rows {
                value +=
                    add_data_gradient(&dense, &labels, &[i], p.shape, &p.theta, loss, &mut grad, &mut scratch).unwrap();
            }
            assert!((value - reference.0).abs() <= 1e-9 * value.abs());
            assert!(grad.iter().zip(&reference.1).all(|(a, b)| (a - b).abs() <= 1e-9 * (1.0 + b.abs())));
        }
    }

    #[test]
    fn malformed_labels_are_rejected() {
        assert!(Labels::new(&[0, 2], &[0, 1], 2, 3).is_err());
        assert!(Labels::new(&[0, 2, 1], &[0, 1], 2, 3).is_err());
        assert!(Labels::new(&[0, 1, 2], &[0, 3], 2, 3).is_err());
        assert!(Labels::new(&[0, 1, 2], &[0, 2], 2, 3).is_ok());
        assert!(Shape::new(0, 3, 2).is_err());
        assert!(Shape::new(3, 3, 0).is_err());
    }
}
