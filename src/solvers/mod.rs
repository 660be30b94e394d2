//! Training algorithms. Each solver states its optimisation problem and optimality
//! conditions above its code; all report progress and poll for interruption through a
//! [`Monitor`].

pub mod attop;
pub mod m3l;
mod monitor;
pub mod partition;
pub mod ranker;
pub mod topk_svm;
pub mod tracenorm;

pub use monitor::{relative_gap, Monitor, Progress, Report, Silent, Status};

/// A dual fit's result: the weights (a row per class or label; None for a kernel fit),
/// the dual rows (n × m: dense row-major, or for Prox-SDCA `topk_svm::DualMatrix`) and
/// the solver's report.
pub type Fitted<R, A = Vec<f64>> = (Option<Vec<f64>>, A, R);

/// The dual rows a fit starts from (n × m, row-major): zeros for a cold start, or the
/// caller's `dual_coef` of shape `shape` for a warm start, which must be n × m and finite.
pub fn initial_dual(dual_coef: Option<(&[f64], &[usize])>, n: usize, m: usize) -> crate::Result<Vec<f64>> {
    let Some((values, shape)) = dual_coef else {
        let size = n.checked_mul(m).ok_or_else(|| crate::Error::param("n_classes", "n x m overflows"))?;
        return Ok(vec![0.0; size]);
    };
    if shape != [n, m] || values.len() != n * m {
        return Err(crate::Error::input("dual_coef", format!("must have shape ({n}, {m}), got {shape:?}")));
    }
    crate::batch::check_finite_rows(values, m, "dual_coef")?;
    Ok(values.to_vec())
}

#[cfg(test)]
mod tests {
    use super::initial_dual;

    #[test]
    fn a_warm_start_is_checked() {
        assert_eq!(initial_dual(None, 2, 3), Ok(vec![0.0; 6]));
        let given = [0.5, -0.5, 0.0, 0.0, 1.0, -1.0];
        assert_eq!(initial_dual(Some((&given, &[2, 3])), 2, 3), Ok(given.to_vec()));
        let shape = initial_dual(Some((&given, &[3, 2])), 2, 3).unwrap_err().to_string();
        assert!(shape.starts_with("dual_coef: must have shape (2, 3), got [3, 2]"), "{shape}");
        let nan = [0.0, 0.0, 0.0, 0.0, f64::NAN, 0.0];
        let finite = initial_dual(Some((&nan, &[2, 3])), 2, 3).unwrap_err().to_string();
        assert!(finite.starts_with("dual_coef: contains NaN or infinity (row 1, column 1)"), "{finite}");
        assert!(initial_dual(None, usize::MAX, 2).is_err());
    }
}
