//! The fits as the estimator runs them: the linear fit in front of [`solve_linear`] (the
//! warm start and the choice between the serial solver and CoCoA+), and [`Fit`], one
//! fit of either model from its settings.

use super::accelerated::solve_linear;
use super::dual::{DualLayout, DualMatrix, DualRowsMut, SparseDual};
use super::kernel_model::KernelModel;
use super::loss::{named_loss, SdcaLoss};
use super::model::{LinearModel, ScoreModel};
use super::problem::Examples;
use super::solver::{check_problem, solve, SdcaOptions, SdcaReport};
use crate::data::{Design, DesignJob, RowBuf};
use crate::kernels::{ColumnCache, KernelJob, KernelSource};
use crate::solvers::{Fitted, Monitor, Progress, Report, Status};
use crate::Result;

/// Below this many examples a parallel (CoCoA+) solve does not pay for its rounds.
const PARALLEL_MIN_ROWS: usize = 10_000;

/// Linear Prox-SDCA from the dual rows `a` (n × m, either layout; zeros for a cold
/// start). W is rebuilt as Σ_i x_i a_iᵀ first, so that the pair the solver starts from
/// is exact. The solve is
/// CoCoA+ over one block per thread of the current pool (at least 2) when `parallel`
/// says so — by default when the pool has 2 threads or more and there are at least
/// 10,000 examples — and serial otherwise; either may hand over to the accelerated
/// outer loop ([`solve_linear`]).
pub fn fit_linear<D: Design, L: SdcaLoss + ?Sized, A: DualRowsMut + ?Sized>(
    model: &mut LinearModel<D>,
    loss: &L,
    ex: &Examples,
    a: &mut A,
    opts: &SdcaOptions,
    parallel: Option<bool>,
    monitor: &mut dyn Monitor,
) -> Result<SdcaReport> {
    let (n, m) = (model.n_rows(), model.n_classes());
    // The problem's checks before W is rebuilt from `a`: a dual of the wrong shape is
    // most often the sign of labels (or label offsets) that do not fit X.
    check_problem(loss, ex, a, n, m)?;
    model.weights_mut().fill(0.0);
    let (mut buf, mut scratch) = (RowBuf::new(), vec![0.0; m]);
    for i in 0..n {
        let ai = a.row(i, m, &mut scratch);
        if ai.iter().any(|&v| v != 0.0) {
            model.apply(i, ai, &mut buf);
        }
    }
    let threads = rayon::current_num_threads();
    let parallel = parallel.unwrap_or(threads >= 2 && n >= PARALLEL_MIN_ROWS);
    solve_linear(model, loss, ex, a, opts, parallel.then_some(threads.max(2)), monitor)
}

/// A fit's settings as the estimator gives them.
#[derive(Debug, Clone)]
pub struct Settings {
    /// m: the labels lie below it.
    pub n_classes: usize,
    /// The loss by name ([`named_loss`]), with its k and smoothing.
    pub loss: String,
    pub k: usize,
    pub smoothing: f64,
    /// A linear fit's constant feature (intercept), or None.
    pub bias: Option<f64>,
    /// A linear fit's choice of CoCoA+ (None: [`fit_linear`]'s default).
    pub parallel: Option<bool>,
    /// Where A is kept, by name ([`DualLayout::named`]: "auto", "dense" or "sparse").
    pub dual_layout: String,
    pub options: SdcaOptions,
}

/// One fit of `examples` from the dual rows `dual` (n × m, either layout; zeros for a
/// cold start): the weights (m × (d [+ 1 for the bias feature]); None for a kernel
/// fit), the dual rows and the report, on a design ([`DesignJob`]: [`fit_linear`]) or a
/// kernel ([`KernelJob`]: [`solve`] on a [`KernelModel`], its columns cached in
/// `cache_mb` MB). The dual rows come back in the layout the fit kept them in
/// ([`DualLayout`]: sparse for the hinge losses from 256 classes on, unless the
/// settings say otherwise).
pub struct Fit<'a> {
    loss: Box<dyn SdcaLoss>,
    examples: Examples<'a>,
    dual: Option<DualMatrix>,
    layout: DualLayout,
    settings: &'a Settings,
    cache_mb: f64,
}

impl<'a> Fit<'a> {
    /// The fit under `settings`, its loss and dual layout named there.
    pub fn new(
        settings: &'a Settings,
        examples: Examples<'a>,
        dual: Option<DualMatrix>,
        cache_mb: f64,
    ) -> Result<Self> {
        let loss = named_loss(&settings.loss, settings.k, settings.smoothing)?;
        let layout = DualLayout::named(&settings.dual_layout)?;
        Ok(Self { loss, examples, dual, layout, settings, cache_mb })
    }

    /// The starting dual rows in the layout the fit keeps them in (zeros for a cold
    /// start, never allocated dense when kept sparse).
    fn dual_in_layout(&mut self, kernel: bool, n: usize) -> Result<DualMatrix> {
        let m = self.settings.n_classes;
        let sparse = self.layout.is_sparse(kernel, self.loss.shrinks_classes(), m)?;
        match self.dual.take() {
            Some(dual) => dual.into_layout(sparse, n, m),
            None if sparse => Ok(DualMatrix::Sparse(SparseDual::zeros(n, m)?)),
            None => Ok(DualMatrix::Dense(crate::solvers::initial_dual(None, n, m)?)),
        }
    }
}

impl DesignJob for Fit<'_> {
    type Output = Fitted<SdcaReport, DualMatrix>;
    fn run<D: Design>(mut self, x: &D, monitor: &mut dyn Monitor) -> Result<Self::Output> {
        let mut dual = self.dual_in_layout(false, x.n_rows())?;
        let s = self.settings;
        let mut model = LinearModel::new(x, s.n_classes, s.bias);
        let (loss, ex, opts) = (&*self.loss, &self.examples, &s.options);
        let report = match &mut dual {
            DualMatrix::Dense(a) => fit_linear(&mut model, loss, ex, a, opts, s.parallel, monitor)?,
            DualMatrix::Sparse(a) => fit_linear(&mut model, loss, ex, a, opts, s.parallel, monitor)?,
        };
        Ok((Some(model.into_weights()), dual, report))
    }
}

/// The kernel fit (scores A·K_i), its columns cached; `bias` is a linear fit's setting:
/// kernel scores have no intercept.
impl KernelJob for Fit<'_> {
    type Output = Fitted<SdcaReport, DualMatrix>;
    fn run<S: KernelSource + ?Sized>(mut self, source: &S, monitor: &mut dyn Monitor) -> Result<Self::Output> {
        let DualMatrix::Dense(mut dual) = self.dual_in_layout(true, source.n())? else {
            unreachable!("a kernel fit keeps A dense (`DualLayout::is_sparse`)")
        };
        let cache = ColumnCache::new(source.n(), self.cache_mb)?;
        let mut model = KernelModel::new(source, self.settings.n_classes, None, cache)?;
        model.sync_dual(&dual)?;
        let opts = &self.settings.options;
        let report = solve(&mut model, &*self.loss, &self.examples, &mut dual, opts, monitor)?;
        Ok((None, DualMatrix::Dense(dual), report))
    }
}

impl Report for SdcaReport {
    fn summary(&self) -> (Status, usize, f64, f64, &[Progress]) {
        (self.status, self.epochs, self.objectives.primal, self.objectives.dual, &self.history)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::DenseRows;
    use crate::losses::TopKVariant;
    use crate::solvers::topk_svm::TopKHinge;
    use crate::solvers::Silent;

    fn problem(n: usize, d: usize) -> (Vec<f64>, Vec<usize>) {
        let x = (0..n * d).map(|t| ((t * 7919) % 97) as f64 / 97.0 - 0.5).collect();
        (x, (0..n).map(|i| (i * 31) % 3).collect())
    }

    /// A warm start rebuilds W from the dual rows: after one more epoch from a solve's
    /// rows, W is still Σ_i x_i a_iᵀ (a model left at zero would not be).
    #[test]
    fn a_warm_start_keeps_the_primal_dual_pair() {
        let (n, d, m) = (300, 5, 3);
        let (x, y) = problem(n, d);
        let design = DenseRows::new(&x, n, d).unwrap();
        let c = vec![1.0; n];
        let ex = Examples::new(&y, &c);
        let loss = TopKHinge { k: 1, variant: TopKVariant::Alpha, smoothing: 0.0 };
        let opts = SdcaOptions { tol: 1e-12, max_epochs: 10, check_every: 10, seed: 1, shrinking: false };
        let mut a = vec![0.0; n * m];
        fit_linear(&mut LinearModel::new(&design, m, Some(1.0)), &loss, &ex, &mut a, &opts, None, &mut Silent).unwrap();
        let mut warm = LinearModel::new(&design, m, Some(1.0));
        let once = SdcaOptions { max_epochs: 1, check_every: 1, ..opts };
        fit_linear(&mut warm, &loss, &ex, &mut a, &once, Some(false), &mut Silent).unwrap();
        let mut rebuilt = LinearModel::new(&design, m, Some(1.0));
        let mut buf = RowBuf::new();
        for (i, ai) in a.chunks(m).enumerate() {
            rebuilt.apply(i, ai, &mut buf);
        }
        for (p, q) in warm.weights().iter().zip(rebuilt.weights()) {
            assert!((p - q).abs() <= 1e-9 * (1.0 + q.abs()), "{p} vs {q}");
        }
        assert!(warm.weights().iter().any(|&w| w != 0.0));
    }

    /// A fit whose dual is stored sparse — cold, warm from sparse or dense rows, through
    /// the accelerated solver (κ = c·max‖x_i‖² ≫ 4 on unscaled rows) — returns the dense
    /// fit's weights and rows, in its own layout; "auto" stores sparse from 256 classes.
    #[test]
    fn sparse_fits_equal_dense_fits() {
        let (n, d, m) = (300, 5, 260);
        let x: Vec<f64> = (0..n * d).map(|t| ((t * 7919) % 97) as f64 / 9.7 - 5.0).collect();
        let y: Vec<usize> = (0..n).map(|i| (i * 31 + i / 7) % m).collect();
        let design = DenseRows::new(&x, n, d).unwrap();
        let c = vec![3.0; n];
        let settings = |layout: &str| Settings {
            n_classes: m,
            loss: "alpha".into(),
            k: 3,
            smoothing: 0.0,
            bias: Some(1.0),
            parallel: Some(false),
            dual_layout: layout.into(),
            options: SdcaOptions { tol: 1e-5, max_epochs: 80, check_every: 5, seed: 3, shrinking: true },
        };
        let fit = |layout: &str, start: Option<DualMatrix>| {
            let s = settings(layout);
            let job = Fit::new(&s, Examples::new(&y, &c), start, 0.0).unwrap();
            DesignJob::run(job, &design, &mut Silent).unwrap()
        };
        let dense_rows = |a: &DualMatrix| match a.clone().into_layout(false, n, m).unwrap() {
            DualMatrix::Dense(values) => values,
            DualMatrix::Sparse(_) => unreachable!(),
        };
        let (w_dense, a_dense, dense) = fit("dense", None);
        let (w_sparse, a_sparse, sparse) = fit("auto", None);
        assert!(matches!(a_dense, DualMatrix::Dense(_)) && matches!(a_sparse, DualMatrix::Sparse(_)));
        // The plain solver checks every 5 epochs, the accelerated stages every 3.
        assert!(dense.history.iter().any(|p| p.epoch % 5 != 0), "no accelerated stage: {:?}", dense.history);
        assert_eq!((w_dense, dense.epochs), (w_sparse, sparse.epochs));
        assert_eq!(dense_rows(&a_dense), dense_rows(&a_sparse));
        // Warm starts, each layout from the other's rows.
        let (w_warm_dense, a_warm_dense, _) = fit("dense", Some(a_sparse));
        let (w_warm_sparse, a_warm_sparse, _) = fit("sparse", Some(a_dense));
        assert_eq!(w_warm_dense, w_warm_sparse);
        assert_eq!(dense_rows(&a_warm_dense), dense_rows(&a_warm_sparse));
    }

    /// Below 10,000 examples the default is the serial solver, even on two threads.
    #[test]
    fn small_problems_are_solved_serially_by_default() {
        let (n, d, m) = (400, 4, 3);
        let (x, y) = problem(n, d);
        let design = DenseRows::new(&x, n, d).unwrap();
        let c = vec![0.5; n];
        let ex = Examples::new(&y, &c);
        let loss = TopKHinge { k: 2, variant: TopKVariant::Beta, smoothing: 0.0 };
        let opts = SdcaOptions { tol: 1e-9, max_epochs: 20, check_every: 5, seed: 2, shrinking: true };
        let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
        let fit = |parallel| {
            pool.install(|| {
                let mut model = LinearModel::new(&design, m, None);
                let mut a = vec![0.0; n * m];
                fit_linear(&mut model, &loss, &ex, &mut a, &opts, parallel, &mut Silent).unwrap();
                (a, model.weights().to_vec())
            })
        };
        let (default, serial, parallel) = (fit(None), fit(Some(false)), fit(Some(true)));
        assert_eq!(default, serial);
        assert_ne!(default.0, parallel.0);
    }
}
