//! Where the scores Wᵀx_i come from: an explicit weight matrix over a design matrix
//! (linear SDCA), or the dual coefficients and a kernel (scores A·K_i, §3.2 of the
//! paper). Prox-SDCA only needs scores, squared norms kii and the rank-one update.

use rayon::prelude::*;
use std::ops::Range;

use ndarray::{s, ArrayView2, ArrayViewMut2};

use crate::data::{Design, RowBuf};

/// The primal side of Prox-SDCA.
pub trait ScoreModel: Sync {
    fn n_rows(&self) -> usize;
    fn n_classes(&self) -> usize;
    /// kii = ⟨x_i, x_i⟩ (the kernel diagonal).
    fn sq_norm(&self, i: usize) -> f64;
    /// s = Wᵀx_i for the current model; `a` is the n × m dual matrix (row-major).
    /// Takes `&self` so the duality-gap pass can run it on all threads.
    fn scores(&self, i: usize, a: &[f64], s: &mut [f64], buf: &mut RowBuf);
    /// The serial loop's version of [`ScoreModel::scores`] (may use a cache).
    fn scores_mut(&mut self, i: usize, a: &[f64], s: &mut [f64], buf: &mut RowBuf) {
        self.scores(i, a, s, buf)
    }
    /// s_t = the score of class `classes[t]` (ascending; the serial loop under class
    /// shrinking). The default computes all m scores into `full` and picks them out;
    /// models that can skip the other classes override it.
    fn class_scores_mut(
        &mut self,
        i: usize,
        a: &[f64],
        classes: &[u32],
        s: &mut [f64],
        full: &mut [f64],
        buf: &mut RowBuf,
    ) {
        if classes.len() == self.n_classes() {
            return self.scores_mut(i, a, s, buf);
        }
        self.scores_mut(i, a, full, buf);
        s.iter_mut().zip(classes).for_each(|(v, &c)| *v = full[c as usize]);
    }
    /// The score rows of examples `rows` into `out` (row-major, |rows| × m). Default:
    /// one [`ScoreModel::scores`] per row; linear models over dense designs use a
    /// blocked matrix product (the gap pass's kernel).
    fn scores_block(&self, rows: Range<usize>, a: &[f64], out: &mut [f64], buf: &mut RowBuf) {
        let m = self.n_classes();
        for (i, s) in rows.zip(out.chunks_exact_mut(m)) {
            self.scores(i, a, s, buf);
        }
    }
    /// W += x_i deltaᵀ after a_i changed by `delta` (the solver updates `a` itself).
    fn apply(&mut self, i: usize, delta: &[f64], buf: &mut RowBuf);
    /// ‖W‖²_F. `from_scores` = Σ_i ⟨a_i, Wᵀx_i⟩, which equals it exactly and is all a
    /// kernel model has; explicit models return their own, more accurate, value.
    fn sq_norm_w(&self, from_scores: f64) -> f64;
    /// Starts loading example i's row and squared norm (a hint).
    fn prefetch_row(&self, _i: usize) {}
    /// Whether the scores read the dual matrix `a` (a kernel model's A·K_i); a model
    /// that does not (explicit W) is handed an empty `a` when A is stored sparse.
    fn reads_dual(&self) -> bool {
        false
    }
}

/// W as an m × dw row-major matrix (one row per class: the layout of `coef_`), over a
/// design matrix with an optional constant feature `bias` appended (the intercept;
/// dw = d + 1 then). Rows are class-major so that the rank-one update touches only the
/// classes whose dual variables changed — usually a handful.
pub struct LinearModel<'a, D: Design> {
    x: &'a D,
    m: usize,
    bias: Option<f64>,
    /// ‖x_i‖² (+ bias²), computed here or borrowed from a caller that keeps them.
    sq_norms: std::borrow::Cow<'a, [f64]>,
    /// 0, 1, …, m − 1: the class list of a full score row.
    all: Vec<u32>,
    pub(crate) w: Vec<f64>,
}

impl<'a, D: Design> LinearModel<'a, D> {
    /// A zero model; `bias = Some(b)` appends the constant feature b.
    pub fn new(x: &'a D, m: usize, bias: Option<f64>) -> Self {
        let sq_norms = Self::sq_norms_of(x, bias);
        Self::assemble(x, m, bias, std::borrow::Cow::Owned(sq_norms))
    }

    /// A zero model over squared norms computed before by [`LinearModel::sq_norms_of`]
    /// (a CoCoA+ partition keeps them across its rounds instead of a pass over X each).
    pub fn with_sq_norms(x: &'a D, m: usize, bias: Option<f64>, sq_norms: &'a [f64]) -> crate::Result<Self> {
        if sq_norms.len() != x.n_rows() {
            return Err(crate::Error::input(
                "sq_norms",
                format!("must hold {} values, got {}", x.n_rows(), sq_norms.len()),
            ));
        }
        Ok(Self::assemble(x, m, bias, std::borrow::Cow::Borrowed(sq_norms)))
    }

    /// ‖x_i‖² + bias² for every row.
    pub fn sq_norms_of(x: &D, bias: Option<f64>) -> Vec<f64> {
        let b2 = bias.map_or(0.0, |b| b * b);
        // A pass over all of X, on the current pool's threads (each value is computed
        // alone, so the result does not depend on their number).
        (0..x.n_rows()).into_par_iter().map_init(RowBuf::new, |buf, i| x.row(i, buf).sq_norm() + b2).collect()
    }

    fn assemble(x: &'a D, m: usize, bias: Option<f64>, sq_norms: std::borrow::Cow<'a, [f64]>) -> Self {
        let dw = x.n_features() + usize::from(bias.is_some());
        let all = (0..m as u32).collect();
        Self { x, m, bias, sq_norms, all, w: vec![0.0; m * dw] }
    }

    /// Width of a weight row (features plus the intercept column).
    pub fn row_width(&self) -> usize {
        self.x.n_features() + usize::from(self.bias.is_some())
    }

    /// The weights, m × dw row-major.
    pub fn weights(&self) -> &[f64] {
        &self.w
    }

    /// The weights, m × dw row-major, taken out of the model.
    pub fn into_weights(self) -> Vec<f64> {
        self.w
    }

    pub fn weights_mut(&mut self) -> &mut [f64] {
        &mut self.w
    }

    pub fn design(&self) -> &'a D {
        self.x
    }

    pub fn bias(&self) -> Option<f64> {
        self.bias
    }

    /// The class list 0, 1, …, m − 1.
    pub fn all_classes(&self) -> &[u32] {
        &self.all
    }

    /// s_t = ⟨w_c, x_i⟩ (+ the intercept column) for c = classes\[t\], for an arbitrary
    /// weight matrix of this model's shape (CoCoA+ blocks score against their local
    /// copy). A class's score does not depend on which other classes are listed.
    pub fn scores_with(&self, w: &[f64], i: usize, classes: &[u32], s: &mut [f64], buf: &mut RowBuf) {
        let dw = self.row_width();
        self.x.row(i, buf).dot_rows(w, dw, classes, s);
        if let Some(b) = self.bias {
            let d = self.x.n_features();
            s.iter_mut().zip(classes).for_each(|(v, &c)| *v += b * w[c as usize * dw + d]);
        }
    }

    /// w += scale · x_i deltaᵀ for an arbitrary weight matrix of this model's shape.
    pub fn apply_with(&self, w: &mut [f64], i: usize, delta: &[f64], scale: f64, buf: &mut RowBuf) {
        let dw = self.row_width();
        let d = self.x.n_features();
        let row = self.x.row(i, buf);
        for (c, &dc) in delta.iter().enumerate() {
            if dc != 0.0 {
                let wc = &mut w[c * dw..(c + 1) * dw];
                row.axpy_into(scale * dc, &mut wc[..d]);
                if let Some(b) = self.bias {
                    wc[d] += scale * dc * b;
                }
            }
        }
    }
}

impl<D: Design> ScoreModel for LinearModel<'_, D> {
    fn n_rows(&self) -> usize {
        self.x.n_rows()
    }
    fn n_classes(&self) -> usize {
        self.m
    }
    fn sq_norm(&self, i: usize) -> f64 {
        self.sq_norms[i]
    }
    fn prefetch_row(&self, i: usize) {
        self.x.prefetch_row(i);
        crate::vector_code::prefetch_entry(&self.sq_norms, i);
    }
    fn scores(&self, i: usize, _a: &[f64], s: &mut [f64], buf: &mut RowBuf) {
        self.scores_with(&self.w, i, &self.all, s, buf)
    }
    fn class_scores_mut(
        &mut self,
        i: usize,
        _a: &[f64],
        classes: &[u32],
        s: &mut [f64],
        _full: &mut [f64],
        buf: &mut RowBuf,
    ) {
        self.scores_with(&self.w, i, classes, s, buf)
    }
    /// S = X_rows W[:, ..d]ᵀ (+ b·W[:, d]) by a cache-blocked GEMM (matrixmultiply,
    /// AVX2/FMA chosen at run time): each weight row is loaded once per block of examples
    /// instead of once per example, so the pass is no longer bound by streaming W.
    fn scores_block(&self, rows: Range<usize>, a: &[f64], out: &mut [f64], buf: &mut RowBuf) {
        let (b, m, d, dw) = (rows.len(), self.m, self.x.n_features(), self.row_width());
        let Some(x) = self.x.dense_block(rows.clone(), buf) else {
            for (i, s) in rows.zip(out.chunks_exact_mut(m)) {
                self.scores(i, a, s, buf);
            }
            return;
        };
        let x = ArrayView2::from_shape((b, d), x).expect("a dense block is rows x features");
        let w = ArrayView2::from_shape((m, dw), &self.w[..]).expect("W is m x dw");
        let mut scores = ArrayViewMut2::from_shape((b, m), &mut out[..b * m]).expect("out holds rows x m");
        ndarray::linalg::general_mat_mul(1.0, &x, &w.slice(s![.., ..d]).t(), 0.0, &mut scores);
        if let Some(bias) = self.bias {
            let intercept = w.column(d);
            for mut row in scores.rows_mut() {
                row.zip_mut_with(&intercept, |v, &wc| *v += bias * wc);
            }
        }
    }
    fn apply(&mut self, i: usize, delta: &[f64], buf: &mut RowBuf) {
        let mut w = std::mem::take(&mut self.w);
        self.apply_with(&mut w, i, delta, 1.0, buf);
        self.w = w;
    }
    fn sq_norm_w(&self, _from_scores: f64) -> f64 {
        crate::linalg::dot(&self.w, &self.w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{CsrRows, DenseRows};

    /// The gap pass's blocked product gives the per-row scores (dense f64 and f32, CSR;
    /// with and without the intercept column), and class subsets give the same values
    /// as the full row bit for bit.
    #[test]
    fn block_and_subset_scores_match_row_scores() {
        let (n, d, m) = (70, 13, 9);
        let x: Vec<f64> = (0..n * d).map(|t| if t % 5 == 0 { 0.0 } else { ((t * 7) as f64 * 0.113).sin() }).collect();
        let x32: Vec<f32> = x.iter().map(|&v| v as f32).collect();
        let (mut indptr, mut indices, mut data) = (vec![0i64], Vec::new(), Vec::new());
        for row in x.chunks(d) {
            for (j, &v) in row.iter().enumerate().filter(|(_, &v)| v != 0.0) {
                indices.push(j as i64);
                data.push(v);
            }
            indptr.push(indices.len() as i64);
        }
        let dense = DenseRows::new(&x, n, d).unwrap();
        let dense32 = DenseRows::new(&x32, n, d).unwrap();
        let csr = CsrRows::new(&indptr, &indices, &data, d).unwrap();
        fn check<D: Design>(x: &D, m: usize, bias: Option<f64>, tol: f64) {
            let mut model = LinearModel::new(x, m, bias);
            let width = model.row_width();
            model.weights_mut().iter_mut().enumerate().for_each(|(t, w)| *w = ((t * 3) as f64 * 0.37).cos());
            let n = x.n_rows();
            let mut buf = RowBuf::new();
            let mut block = vec![0.0; n * m];
            model.scores_block(3..n, &[], &mut block[..(n - 3) * m], &mut buf);
            let subset = [1u32, 2, 5, 8];
            for i in 3..n {
                let mut s = vec![0.0; m];
                model.scores(i, &[], &mut s, &mut buf);
                let row = x.row(i, &mut buf);
                for (c, &v) in s.iter().enumerate() {
                    let naive = row.dot(&model.weights()[c * width..])
                        + bias.map_or(0.0, |b| b * model.weights()[c * width + width - 1]);
                    assert!((v - naive).abs() <= 1e-14, "row {i} class {c}");
                    assert!((block[(i - 3) * m + c] - v).abs() <= tol * (1.0 + v.abs()), "row {i} class {c}");
                }
                let mut some = [0.0; 4];
                model.scores_with(model.weights(), i, &subset, &mut some, &mut buf);
                for (&c, &v) in subset.iter().zip(&some) {
                    assert_eq!(v.to_bits(), s[c as usize].to_bits());
                }
            }
        }
        for bias in [None, Some(0.5)] {
            check(&dense, m, bias, 1e-13);
            check(&dense32, m, bias, 1e-13);
            check(&csr, m, bias, 0.0);
        }
    }
}
