//! A kernel matrix the caller computed: a row-major n × n `f32`/`f64` buffer, borrowed
//! and never copied (it may be a `numpy.memmap` larger than RAM; pages are read as
//! columns are requested).
//!
//! Symmetry is assumed, not enforced: "column" i is read as row i (contiguous, one
//! sequential read), i.e. `column_into(i)` returns K[i, :] = K[:, i]ᵀ only when K is
//! symmetric. The fits build it with [`PrecomputedKernel::checked`], which checks that
//! once (one pass over K).

use rayon::prelude::*;

use super::KernelSource;
use crate::real::Real;
use crate::{Error, Result};

/// Tile side of the symmetry check (a 64 × 64 tile of `f64` is 32 KB).
const TILE: usize = 64;

/// A borrowed, precomputed n × n kernel matrix.
#[derive(Debug, Clone)]
pub struct PrecomputedKernel<'a, T: Real> {
    k: &'a [T],
    n: usize,
    diag: Vec<f64>,
}

impl<'a, T: Real> PrecomputedKernel<'a, T> {
    /// Wraps the row-major `n_rows × n_cols` buffer `k`. Checks that it is square,
    /// non-empty, and that its diagonal is finite and ≥ 0 (O(n); the off-diagonal entries
    /// are only read by [`Self::check_symmetric`]).
    pub fn new(k: &'a [T], n_rows: usize, n_cols: usize) -> Result<Self> {
        if n_rows != n_cols {
            return Err(Error::input("X", format!("a precomputed kernel must be square, got {n_rows} x {n_cols}")));
        }
        let n = n_rows;
        if n.checked_mul(n) != Some(k.len()) {
            return Err(Error::input("X", format!("buffer of {} values is not {n} x {n}", k.len())));
        }
        if n == 0 {
            return Err(Error::input("X", "needs at least one example"));
        }
        let diag: Vec<f64> = (0..n).map(|i| k[i * n + i].to_f64()).collect();
        if let Some((i, v)) = diag.iter().enumerate().find(|(_, v)| !(v.is_finite() && **v >= 0.0)) {
            return Err(Error::input(
                "X",
                format!(
                    "precomputed kernel diagonal K[{i}, {i}] = {v} must be finite and >= 0 (not positive semidefinite)"
                ),
            ));
        }
        Ok(Self { k, n, diag })
    }

    /// Row i of K (= column i when K is symmetric).
    pub fn row(&self, i: usize) -> &'a [T] {
        &self.k[i * self.n..(i + 1) * self.n]
    }

    /// [`Self::new`], then [`Self::check_symmetric`] at the fits' tolerance, 1e-6 relative
    /// to the largest diagonal entry (the one place it is chosen).
    pub fn checked(k: &'a [T], n_rows: usize, n_cols: usize) -> Result<Self> {
        let kernel = Self::new(k, n_rows, n_cols)?;
        kernel.check_symmetric(1e-6)?;
        Ok(kernel)
    }

    /// Checks that every entry is finite and |K[i, j] − K[j, i]| ≤ tol · max_i |K[i, i]|
    /// (one tiled, parallel pass over K). Reports the first offending pair in row order.
    pub fn check_symmetric(&self, tol: f64) -> Result<()> {
        if !(tol >= 0.0 && tol.is_finite()) {
            return Err(Error::param("tol", format!("must be finite and >= 0, got {tol}")));
        }
        let (n, k) = (self.n, self.k);
        let bound = tol * self.diag.iter().fold(0.0f64, |m, &v| m.max(v));
        let at = |i: usize, j: usize| k[i * n + j].to_f64();
        let bad = (0..n.div_ceil(TILE))
            .into_par_iter()
            .map(|ti| {
                let rows = ti * TILE..((ti + 1) * TILE).min(n);
                for tj in ti..n.div_ceil(TILE) {
                    for i in rows.clone() {
                        for j in (tj * TILE).max(i + 1)..((tj + 1) * TILE).min(n) {
                            let (u, v) = (at(i, j), at(j, i));
                            if !(u.is_finite() && v.is_finite() && (u - v).abs() <= bound) {
                                return Some((i, j, u, v));
                            }
                        }
                    }
                }
                None
            })
            .find_first(Option::is_some)
            .flatten();
        match bad {
            None => Ok(()),
            Some((i, j, u, v)) if !(u.is_finite() && v.is_finite()) => {
                Err(Error::input("X", format!("precomputed kernel has a non-finite entry: K[{i}, {j}] = {u}, K[{j}, {i}] = {v}")))
            }
            Some((i, j, u, v)) => Err(Error::input(
                "X",
                format!("precomputed kernel is not symmetric: K[{i}, {j}] = {u} but K[{j}, {i}] = {v} (tolerance {bound:e})"),
            )),
        }
    }
}

impl<T: Real> KernelSource for PrecomputedKernel<'_, T> {
    fn n(&self) -> usize {
        self.n
    }

    fn diag(&self, i: usize) -> f64 {
        self.diag[i]
    }

    /// Reads row i (K symmetric: see the module docs).
    fn column_into(&self, i: usize, out: &mut [f64]) {
        let row = self.row(i);
        match T::as_f64_slice(row) {
            Some(r) => out.copy_from_slice(r),
            None => {
                assert_eq!(out.len(), row.len(), "column_into: output must have n entries");
                out.iter_mut().zip(row).for_each(|(o, v)| *o = v.to_f64());
            }
        }
    }

    fn entries_into(&self, i: usize, rows: &[usize], out: &mut [f64]) {
        assert_eq!(out.len(), rows.len(), "entries_into: output must have one entry per row");
        let row = self.row(i);
        out.iter_mut().zip(rows).for_each(|(o, &j)| *o = row[j].to_f64());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gram(n: usize) -> Vec<f64> {
        let x: Vec<f64> = (0..n).map(|i| (i as f64 * 0.7).sin()).collect();
        (0..n * n).map(|t| (-(x[t / n] - x[t % n]).powi(2)).exp()).collect()
    }

    #[test]
    fn columns_entries_and_diagonal() {
        let n = 70;
        let g = gram(n);
        let g32: Vec<f32> = g.iter().map(|&v| v as f32).collect();
        let k = PrecomputedKernel::new(&g, n, n).unwrap();
        let k32 = PrecomputedKernel::new(&g32, n, n).unwrap();
        let mut col = vec![0.0; n];
        k.column_into(5, &mut col);
        assert_eq!(&col[..], &g[5 * n..6 * n]);
        k32.column_into(5, &mut col);
        assert!(col.iter().zip(&g[5 * n..]).all(|(a, b)| *a == *b as f32 as f64));
        let mut e = [0.0; 3];
        k.entries_into(7, &[0, 69, 7], &mut e);
        assert_eq!(e, [g[7 * n], g[7 * n + 69], 1.0]);
        assert_eq!(k.diag(3), 1.0);
        let idx = [3, 69, 3];
        let mut cols = vec![0.0; 3 * n];
        k.columns_into(&idx, &mut cols);
        for (b, &i) in idx.iter().enumerate() {
            assert_eq!(&cols[b * n..(b + 1) * n], &g[i * n..(i + 1) * n]);
        }
    }

    #[test]
    fn shape_diagonal_and_symmetry_are_checked() {
        let n = 130; // three tiles
        let mut g = gram(n);
        assert!(PrecomputedKernel::new(&g, n, n - 1).is_err());
        assert!(PrecomputedKernel::new(&g[1..], n, n).is_err());
        assert!(PrecomputedKernel::new(&g[..0], 0, 0).is_err());
        let k = PrecomputedKernel::new(&g, n, n).unwrap();
        assert!(k.check_symmetric(0.0).is_ok());
        assert!(k.check_symmetric(-1.0).is_err());
        g[100 * n + 3] += 1e-9;
        let k = PrecomputedKernel::new(&g, n, n).unwrap();
        assert!(k.check_symmetric(1e-8).is_ok());
        let err = k.check_symmetric(1e-12).unwrap_err().to_string();
        assert!(err.contains("K[3, 100]"), "{err}");
        assert!(PrecomputedKernel::checked(&g, n, n).is_ok());
        g[100 * n + 3] += 1e-3;
        assert!(PrecomputedKernel::checked(&g, n, n).unwrap_err().to_string().contains("K[3, 100]"));
        g[100 * n + 3] = f64::NAN;
        let k = PrecomputedKernel::new(&g, n, n).unwrap();
        assert!(k.check_symmetric(1.0).unwrap_err().to_string().contains("non-finite"));
        g[4 * n + 4] = -1.0;
        assert!(PrecomputedKernel::new(&g, n, n).is_err());
    }
}
