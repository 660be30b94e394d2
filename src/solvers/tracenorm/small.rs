//! The small dense linear algebra of rank-one descent, from the `faer` crate: thin SVDs
//! of the k × k' subspace matrices and of the tall d × r atom matrices (orthonormal
//! bases, W's singular pairs), and the top eigenvalue of a small Gram matrix. Rank-one
//! descent keeps its matrices as ndarray arrays (row-major, as the products with X take
//! them); they are copied into faer's column-major matrices here, which costs nothing
//! next to the factorisations (every matrix here has at most a few hundred columns).

use faer::{Mat, MatRef, Side};
use ndarray::{Array2, ArrayView2, Axis};

use crate::{Error, Result};

fn to_faer(a: ArrayView2<'_, f64>) -> Mat<f64> {
    Mat::from_fn(a.nrows(), a.ncols(), |i, j| a[[i, j]])
}

fn from_faer(a: MatRef<'_, f64>) -> Array2<f64> {
    Array2::from_shape_fn((a.nrows(), a.ncols()), |(i, j)| a[(i, j)])
}

/// A = U diag(s) Vᵀ with s non-increasing, U (r × p), V (c × p), p = min(r, c).
#[derive(Debug, Clone)]
pub struct ThinSvd {
    pub u: Array2<f64>,
    pub s: Vec<f64>,
    pub v: Array2<f64>,
}

impl ThinSvd {
    /// The indices of the singular values above `relative` × the largest (none when A = 0).
    pub fn above(&self, relative: f64) -> Vec<usize> {
        match self.s.first() {
            Some(&top) if top > 0.0 => (0..self.s.len()).filter(|&j| self.s[j] > relative * top).collect(),
            _ => Vec::new(),
        }
    }
}

/// The thin SVD of `a`; an error (not a panic) for non-finite entries or if the iteration
/// does not converge.
pub fn thin_svd(a: ArrayView2<'_, f64>) -> Result<ThinSvd> {
    let (rows, cols) = a.dim();
    if rows == 0 || cols == 0 {
        return Ok(ThinSvd { u: Array2::zeros((rows, 0)), s: Vec::new(), v: Array2::zeros((cols, 0)) });
    }
    if a.iter().any(|x| !x.is_finite()) {
        return Err(Error::no_solution("subspace step", "non-finite weights"));
    }
    let svd = to_faer(a).thin_svd().map_err(|_| Error::no_solution("subspace step", "the SVD did not converge"))?;
    let s = (0..rows.min(cols)).map(|j| svd.S().column_vector()[j]).collect();
    Ok(ThinSvd { u: from_faer(svd.U()), s, v: from_faer(svd.V()) })
}

/// A = Q R with Q (r × p) orthonormal columns and R (p × c) upper triangular, p = min(r, c).
pub fn thin_qr(a: ArrayView2<'_, f64>) -> (Array2<f64>, Array2<f64>) {
    let (rows, cols) = a.dim();
    if rows == 0 || cols == 0 {
        return (Array2::zeros((rows, 0)), Array2::zeros((0, cols)));
    }
    let qr = to_faer(a).qr();
    (from_faer(qr.compute_thin_Q().as_ref()), from_faer(qr.thin_R()))
}

/// The columns `keep` of `a`.
pub fn columns(a: &Array2<f64>, keep: &[usize]) -> Array2<f64> {
    a.select(Axis(1), keep)
}

/// An orthonormal basis of the column span of `a` (tall and thin): its left singular
/// vectors above 1e-10 of the largest singular value (none when `a` = 0).
pub fn orthonormal_basis(a: ArrayView2<'_, f64>) -> Result<Array2<f64>> {
    let svd = thin_svd(a)?;
    Ok(columns(&svd.u, &svd.above(1e-10)))
}

/// An orthonormal basis of the part of span(`b`) outside span(`q`), for `q` with
/// orthonormal columns and `b` with columns of length at most 1: `b` projected off `q`
/// (twice: once leaves rounding of the size of what it removed), its left singular vectors
/// above 1e-10 (the threshold of [`orthonormal_basis`] for such columns), projected off
/// `q` once more and orthonormalised by QR (a vector from a small singular value carries
/// rounding of size ε/s along `q`).
pub fn orthonormal_extension(q: ArrayView2<'_, f64>, b: ArrayView2<'_, f64>) -> Result<Array2<f64>> {
    let off = |a: Array2<f64>| &a - &q.dot(&q.t().dot(&a));
    let rest = off(off(b.to_owned()));
    let svd = thin_svd(rest.view())?;
    let keep: Vec<usize> = (0..svd.s.len()).filter(|&j| svd.s[j] > 1e-10).collect();
    Ok(thin_qr(off(columns(&svd.u, &keep)).view()).0)
}

/// The largest singular value of the tall `a` (n × k): the square root of the top
/// eigenvalue of the k × k Gram matrix aᵀa (a step size needs no more precision).
pub fn spectral_norm(a: ArrayView2<'_, f64>) -> Result<f64> {
    if a.ncols() == 0 {
        return Ok(0.0);
    }
    let gram = a.t().dot(&a);
    let values = to_faer(gram.view())
        .self_adjoint_eigenvalues(Side::Lower)
        .map_err(|_| Error::no_solution("subspace step", "the eigenvalue iteration did not converge"))?;
    Ok(values.last().copied().unwrap_or(0.0).max(0.0).sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn svd_reconstructs_and_bases_are_orthonormal() {
        let a = array![[3.0, 1.0], [1.0, 3.0], [0.0, 2.0]];
        let svd = thin_svd(a.view()).unwrap();
        assert!(svd.s[0] >= svd.s[1]);
        let back = (&svd.u * &ndarray::Array1::from(svd.s.clone())).dot(&svd.v.t());
        assert!((&back - &a).iter().all(|e| e.abs() < 1e-12));
        // A repeated column adds nothing to the span.
        let b = array![[1.0, 2.0], [0.0, 0.0], [1.0, 2.0]];
        let q = orthonormal_basis(b.view()).unwrap();
        assert_eq!(q.ncols(), 1);
        assert!((q.column(0).dot(&q.column(0)) - 1.0).abs() < 1e-12);
        assert_eq!(orthonormal_basis(Array2::zeros((3, 2)).view()).unwrap().ncols(), 0);
        assert!((spectral_norm(a.view()).unwrap() - svd.s[0]).abs() < 1e-10);
        assert!(thin_svd(array![[f64::NAN]].view()).is_err());
        let (q, r) = thin_qr(a.view());
        assert!((&q.dot(&r) - &a).iter().all(|e| e.abs() < 1e-12));
        assert!((&q.t().dot(&q) - &Array2::<f64>::eye(2)).iter().all(|e| e.abs() < 1e-12));
    }

    #[test]
    fn an_extension_completes_an_orthonormal_basis() {
        // q spans e1, e2 of R⁵; b holds e1 (inside), a vector 1e-9 off span(q) (kept: above
        // the threshold) and e4 + e1 (half outside).
        let mut q = Array2::zeros((5, 2));
        (q[[0, 0]], q[[1, 1]]) = (1.0, 1.0);
        let s = 0.5f64.sqrt();
        let b = array![[1.0, s, s], [0.0, s, 0.0], [0.0, 1e-9, 0.0], [0.0, 0.0, s], [0.0, 0.0, 0.0]];
        let e = orthonormal_extension(q.view(), b.view()).unwrap();
        assert_eq!(e.ncols(), 2);
        let all = ndarray::concatenate(Axis(1), &[q.view(), e.view()]).unwrap();
        assert!((&all.t().dot(&all) - &Array2::<f64>::eye(4)).iter().all(|x| x.abs() < 1e-14));
        // Nothing outside: an empty extension.
        assert_eq!(orthonormal_extension(q.view(), q.view()).unwrap().ncols(), 0);
    }
}
