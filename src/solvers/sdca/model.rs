//! Where the scores Wᵀx_i come from: an explicit weight matrix over a design matrix
//! (linear SDCA), or the dual coefficients and a kernel (scores A·K_i, §3.2 of the
//! paper). Prox-SDCA only needs scores, squared norms kii and the rank-one update.

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
    /// W += x_i deltaᵀ after a_i changed by `delta` (the solver updates `a` itself).
    fn apply(&mut self, i: usize, delta: &[f64], buf: &mut RowBuf);
    /// ‖W‖²_F. `from_scores` = Σ_i ⟨a_i, Wᵀx_i⟩, which equals it exactly and is all a
    /// kernel model has; explicit models return their own, more accurate, value.
    fn sq_norm_w(&self, from_scores: f64) -> f64;
}

/// W as an m × dw row-major matrix (one row per class: the layout of `coef_`), over a
/// design matrix with an optional constant feature `bias` appended (the intercept;
/// dw = d + 1 then). Rows are class-major so that the rank-one update touches only the
/// classes whose dual variables changed — usually a handful.
pub struct LinearModel<'a, D: Design> {
    x: &'a D,
    m: usize,
    bias: Option<f64>,
    sq_norms: Vec<f64>,
    pub(crate) w: Vec<f64>,
}

impl<'a, D: Design> LinearModel<'a, D> {
    /// A zero model; `bias = Some(b)` appends the constant feature b.
    pub fn new(x: &'a D, m: usize, bias: Option<f64>) -> Self {
        let b2 = bias.map_or(0.0, |b| b * b);
        let mut buf = RowBuf::new();
        let sq_norms = (0..x.n_rows()).map(|i| x.row(i, &mut buf).sq_norm() + b2).collect();
        let dw = x.n_features() + usize::from(bias.is_some());
        Self { x, m, bias, sq_norms, w: vec![0.0; m * dw] }
    }

    /// Width of a weight row (features plus the intercept column).
    pub fn row_width(&self) -> usize {
        self.x.n_features() + usize::from(self.bias.is_some())
    }

    /// The weights, m × dw row-major.
    pub fn weights(&self) -> &[f64] {
        &self.w
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

    /// s = Wᵀx_i for an arbitrary weight matrix of this model's shape (CoCoA+ blocks
    /// score against their local copy).
    pub fn scores_with(&self, w: &[f64], i: usize, s: &mut [f64], buf: &mut RowBuf) {
        let dw = self.row_width();
        let d = self.x.n_features();
        let row = self.x.row(i, buf);
        for (c, sc) in s.iter_mut().enumerate() {
            let wc = &w[c * dw..(c + 1) * dw];
            *sc = row.dot(&wc[..d]) + self.bias.map_or(0.0, |b| b * wc[d]);
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
    fn scores(&self, i: usize, _a: &[f64], s: &mut [f64], buf: &mut RowBuf) {
        self.scores_with(&self.w, i, s, buf)
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
