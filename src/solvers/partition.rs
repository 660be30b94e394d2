//! A CoCoA+ partition of either dual solver behind one interface, the one the distributed
//! driver (`toprank.distributed`) calls where the partition's rows live: TopKSVC's
//! (`topk_svm::Partition`, which takes its loss at every call, kept here with it) or
//! linear M3L's (`m3l::local_round::Partition`). Built on the partition's rows X (their
//! ‖x_i‖² computed once); every later call takes the same X and the broadcast weights W
//! (m × width, one row per class or label).
//!
//! The driver's protocol: after committing the last round's change by its step
//! ([`Partition::commit`]; M3L's rounds add, t = 1), a [`round`](Partition::round) from W
//! or the duality gap's [`terms`](Partition::terms) at W; the state moves between
//! processes as [`NamedArrays`].

use super::m3l::{local_round as m3l, M3lRoundOptions};
use super::topk_svm::{self, LinearModel, NamedArrays, PartitionRound, SdcaLoss};
use super::Monitor;
use crate::data::{Design, DesignJob};
use crate::{Error, Result};

/// What a round sends to the driver: u = W + σ'ΔW_k and the round's dual change at t = ½
/// and 1 (zeros without a line search).
pub type Outcome = (Vec<f64>, (f64, f64));

/// A partition of either estimator's CoCoA+ fit.
pub enum Partition {
    TopKSvm(topk_svm::Partition, Box<dyn SdcaLoss>),
    M3l(m3l::Partition),
}

impl Partition {
    /// TopKSVC's partition of the rows `x` under `loss`: class indices `y` below
    /// `n_classes` and the examples' C times their weights `c`, A_k = 0.
    pub fn topk_svm<D: Design>(
        x: &D,
        loss: Box<dyn SdcaLoss>,
        y: Vec<usize>,
        c: Vec<f64>,
        n_classes: usize,
        opts: PartitionRound,
    ) -> Result<Self> {
        let sq_norms = LinearModel::sq_norms_of(x, opts.bias);
        Ok(Self::TopKSvm(topk_svm::Partition::new(&*loss, y, c, sq_norms, n_classes, opts)?, loss))
    }

    /// Linear M3L's partition of the rows `x`: `labels` labels, Y (±1), R, Δ⁺ and Δ⁻
    /// (row-major, `m3l::Partition::new`), the penalty `c`, α_k = 0.
    pub fn m3l<D: Design>(x: &D, labels: usize, arrays: [Vec<f64>; 4], c: f64, opts: M3lRoundOptions) -> Result<Self> {
        let sq_norms = LinearModel::sq_norms_of(x, opts.bias);
        Ok(Self::M3l(m3l::Partition::new(labels, arrays, c, sq_norms, opts)?))
    }

    /// The rows of W: the classes or the labels.
    pub fn w_rows(&self) -> usize {
        match self {
            Self::TopKSvm(part, _) => part.n_classes(),
            Self::M3l(part) => part.labels(),
        }
    }

    /// Commits the last round's change by the driver's step t.
    pub fn commit(&mut self, t: f64) -> Result<()> {
        match self {
            Self::TopKSvm(part, _) => part.commit(t),
            Self::M3l(part) => part.commit(t),
        }
    }

    /// A round from W: u = W + σ'ΔW_k and, with a line search, the round's dual change at
    /// t = ½ and 1 (zeros otherwise); `None` if the monitor asked to stop.
    pub fn round<D: Design>(&mut self, x: &D, w: &[f64], monitor: &mut dyn Monitor) -> Result<Option<Outcome>> {
        match self {
            Self::TopKSvm(part, loss) => part.round(x, &**loss, w, monitor),
            Self::M3l(part) => Ok(part.round(x, w, monitor)?.map(|u| (u, (0.0, 0.0)))),
        }
    }

    /// The gap terms at (W, A_k): TopKSVC's (Σ c_i L_i(W), Σ D_i(a_i), 0), M3L's shares of
    /// (P, D) and its largest |projected gradient|.
    pub fn terms<D: Design>(&mut self, x: &D, w: &[f64]) -> Result<(f64, f64, f64)> {
        match self {
            Self::TopKSvm(part, loss) => part.terms(x, &**loss, w).map(|(loss, dual)| (loss, dual, 0.0)),
            Self::M3l(part) => part.terms(x, w),
        }
    }

    /// The state as named arrays (each partition's `to_named`).
    pub fn to_named(&self) -> NamedArrays {
        match self {
            Self::TopKSvm(part, _) => part.to_named(),
            Self::M3l(part) => part.to_named(),
        }
    }

    /// Replaces the state by [`to_named`](Self::to_named)'s arrays from elsewhere, checked.
    pub fn restore(&mut self, named: NamedArrays) -> Result<()> {
        match self {
            Self::TopKSvm(part, _) => part.restore(named),
            Self::M3l(part) => part.restore(named),
        }
    }
}

/// The constructor of a partition on its rows X, with its arguments ([`Partition::topk_svm`],
/// [`Partition::m3l`]): a job on X, which is checked for NaN and infinity here, once.
pub enum Build {
    TopKSvm(Box<dyn SdcaLoss>, Vec<usize>, Vec<f64>, usize, PartitionRound),
    M3l(usize, [Vec<f64>; 4], f64, M3lRoundOptions),
}

/// TopKSVC's partition settings as the driver gives them: the loss by name
/// ([`topk_svm::named_loss`]) and the rounds' options ([`PartitionRound`]).
#[derive(Debug, Clone)]
pub struct SvcSettings {
    pub loss: String,
    pub k: usize,
    pub smoothing: f64,
    pub bias: Option<f64>,
    pub n_classes: usize,
    pub shrinking: bool,
    pub local_epochs: f64,
    pub sigma: f64,
    pub line_search: bool,
}

impl Build {
    /// TopKSVC's partition: class indices `y`, the examples' C times their weights `c`,
    /// the settings and the rounds' `seed`.
    pub fn svc(y: Vec<usize>, c: Vec<f64>, s: &SvcSettings, seed: u64) -> Result<Self> {
        let (sigma, local_epochs, shrinking, line_search) = (s.sigma, s.local_epochs, s.shrinking, s.line_search);
        let opts = PartitionRound { sigma, local_epochs, seed, shrinking, line_search, bias: s.bias };
        Ok(Build::TopKSvm(topk_svm::named_loss(&s.loss, s.k, s.smoothing)?, y, c, s.n_classes, opts))
    }
}

impl DesignJob for Build {
    type Output = Partition;
    fn run<D: Design>(self, x: &D, _monitor: &mut dyn Monitor) -> Result<Partition> {
        match self {
            Build::TopKSvm(loss, y, c, m, opts) => Partition::topk_svm(x, loss, y, c, m, opts),
            Build::M3l(labels, arrays, c, opts) => Partition::m3l(x, labels, arrays, c, opts),
        }
    }
}

/// A call on the partition's rows X (checked when it was built) from W (`w`, `w_rows`
/// rows, one per class or label): a round (`round` true: u and its dual change at t = ½,
/// 1; None if the monitor asked to stop) or the gap terms.
pub struct Call<'a> {
    pub part: &'a mut Partition,
    pub w: &'a [f64],
    pub w_rows: usize,
    pub round: bool,
}

impl DesignJob for Call<'_> {
    type Output = Option<(Vec<f64>, [f64; 3])>;
    const CHECKS_X_ITSELF: bool = true;
    fn run<D: Design>(self, x: &D, monitor: &mut dyn Monitor) -> Result<Self::Output> {
        let rows = self.part.w_rows();
        if self.w_rows != rows {
            return Err(Error::input("coef", format!("must have {rows} rows, got {}", self.w_rows)));
        }
        Ok(match self {
            Call { part, w, round: true, .. } => {
                part.round(x, w, monitor)?.map(|(u, (half, one))| (u, [half, one, 0.0]))
            }
            Call { part, w, round: false, .. } => Some((Vec::new(), part.terms(x, w)?.into())),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::DenseRows;
    use crate::solvers::Silent;

    #[test]
    fn either_partition_answers_as_its_estimator_does() {
        let (n, d, m) = (6, 2, 3);
        let x: Vec<f64> = (0..n * d).map(|i| ((i * 7 % 5) as f64 - 2.0) / 3.0).collect();
        let x = DenseRows::new(&x, n, d).unwrap();
        let (y, c) = ((0..n).map(|i| i % m).collect::<Vec<_>>(), vec![0.5; n]);
        let opts =
            PartitionRound { sigma: 1.0, local_epochs: 1.0, seed: 3, shrinking: false, line_search: true, bias: None };
        let loss = || topk_svm::named_loss("alpha", 1, 0.0).unwrap();
        let mut svc = Partition::topk_svm(&x, loss(), y.clone(), c.clone(), m, opts).unwrap();
        let sq_norms = LinearModel::sq_norms_of(&x, None);
        let mut direct = topk_svm::Partition::new(&*loss(), y, c, sq_norms, m, opts).unwrap();
        let w = vec![0.0; m * d];
        assert_eq!(svc.w_rows(), m);
        assert_eq!(svc.round(&x, &w, &mut Silent).unwrap(), direct.round(&x, &*loss(), &w, &mut Silent).unwrap());
        assert_eq!(svc.to_named(), direct.to_named());
        let terms = direct.terms(&x, &*loss(), &w).unwrap();
        assert_eq!(svc.terms(&x, &w).unwrap(), (terms.0, terms.1, 0.0));

        // M3L: 2 labels, R = I, Hamming losses; its rounds add (t = 1) and report no change.
        let signs: Vec<f64> = (0..n * 2).map(|i| if i % 3 == 0 { 1.0 } else { -1.0 }).collect();
        let arrays = [signs, vec![1.0, 0.0, 0.0, 1.0], vec![0.0; n * 2], vec![2.0; n * 2]];
        let round = M3lRoundOptions { sigma: 1.0, first_epoch: 1, epochs: 1, seed: 0, bias: None };
        let mut m3l = Partition::m3l(&x, 2, arrays, 1.0, round).unwrap();
        assert_eq!(m3l.w_rows(), 2);
        assert!(m3l.commit(0.5).is_err());
        let (u, change) = m3l.round(&x, &vec![0.0; 2 * d], &mut Silent).unwrap().unwrap();
        assert_eq!((u.len(), change), (2 * d, (0.0, 0.0)));
    }

    /// A call from W checks that W has a row per class (the driver's `coef`), then runs.
    #[test]
    fn a_call_checks_the_rows_of_w() {
        let (n, d, m) = (4, 2, 3);
        let x: Vec<f64> = (0..n * d).map(|i| i as f64 / 8.0).collect();
        let x = DenseRows::new(&x, n, d).unwrap();
        let settings = SvcSettings {
            loss: "alpha".into(),
            k: 1,
            smoothing: 0.0,
            bias: None,
            n_classes: m,
            shrinking: false,
            local_epochs: 1.0,
            sigma: 1.0,
            line_search: false,
        };
        let build = Build::svc((0..n).map(|i| i % m).collect(), vec![1.0; n], &settings, 0).unwrap();
        let mut part = build.run(&x, &mut Silent).unwrap();
        let w = vec![0.0; m * d];
        let wrong = Call { part: &mut part, w: &w, w_rows: 2, round: true }.run(&x, &mut Silent);
        assert_eq!(wrong.unwrap_err().to_string(), "coef: must have 3 rows, got 2");
        let round = Call { part: &mut part, w: &w, w_rows: m, round: true }.run(&x, &mut Silent).unwrap();
        let (u, terms) = round.unwrap();
        assert_eq!((u.len(), terms[2]), (m * d, 0.0));
        let terms = Call { part: &mut part, w: &w, w_rows: m, round: false }.run(&x, &mut Silent).unwrap();
        assert_eq!(terms.map(|(u, _)| u.len()), Some(0));
    }
}
