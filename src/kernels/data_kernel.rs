//! Kernel columns computed on the fly from a design matrix (dense `f32`/`f64` or CSR).
//!
//! Every entry is k(x_j, x_i) = `f.from_dot(⟨x_j, x_i⟩, ‖x_j‖², ‖x_i‖²)`, computed in two
//! passes: `f.prepare` per entry, then `f.finish` over the whole slice (the RBF's exp is
//! vectorised there). The inner product is taken between example j and example i
//! *densified* into an `f64` buffer (sparse rows are scattered into a zeroed buffer of
//! width d and cleared again in O(nnz)): dense rows with the register-blocked products
//! of `crate::linalg`, sparse rows with `Row::dot`. The squared norms are computed by that same
//! inner product, so every path (`column_into`, `entries_into`, blocked `columns_into`,
//! `cross_into`, the diagonal) gives bit-for-bit the same values, and an RBF diagonal is
//! exactly 1. (A design's rows are taken to be all dense or all sparse, as for
//! `DenseRows` and `CsrRows`; row 0 decides.)
//!
//! Blocking: one column costs a pass over all of X, which for large n·d is bound by
//! memory bandwidth. `columns_into` densifies a block of up to 64 query rows (at most
//! ~512 KB, so it stays in L2) and streams X once per block in parallel tasks of ~64k
//! multiply-adds; within a task, each group of four query rows (in L1) meets every row
//! of the task (in L2). Each entry is computed the same way whatever the split, so
//! results do not depend on the thread count.

use std::cell::RefCell;
use std::ops::Range;

use rayon::prelude::*;

use super::{KernelFunction, KernelSource};
use crate::batch::check_finite_rows;
use crate::data::{DenseRows, Design, Row, RowBuf};
use crate::linalg::{dot, dot4};
use crate::{Error, Result};

/// Bytes of densified query rows per block.
const BLOCK_BYTES: usize = 512 * 1024;
/// Most query rows per block.
const MAX_BLOCK: usize = 64;
/// Multiply-adds per parallel task.
const TASK_WORK: usize = 1 << 16;
/// Fewest rows of X per parallel task.
const MIN_TASK_ROWS: usize = 16;
/// Fewest features for the tiled dense path (below, X's rows are cheap to re-read and
/// per-entry overheads dominate: row groups against each query row are faster).
const TILE_MIN_FEATURES: usize = 32;

/// The kernel matrix of the rows of a design matrix, computed on demand. Only the
/// squared norms and the diagonal (O(n)) are stored.
pub struct DataKernel<'a, D: Design> {
    x: &'a D,
    f: KernelFunction,
    sq: Vec<f64>,
    diag: Vec<f64>,
    /// Average stored entries per row (the cost of one inner product).
    row_work: usize,
    /// Rows are dense (`Row::Dense`; a design's rows are all of one kind).
    dense_rows: bool,
}

impl<'a, D: Design> DataKernel<'a, D> {
    /// Checks `f`, computes the squared norms and the diagonal (in parallel). Fails if X
    /// has no rows or a diagonal entry is negative or not finite (a polynomial kernel
    /// with coef0 < 0 and an odd degree is not positive semidefinite).
    pub fn new(x: &'a D, f: KernelFunction) -> Result<Self> {
        f.check()?;
        let n = x.n_rows();
        if n == 0 {
            return Err(Error::input("X", "needs at least one example"));
        }
        let d = x.n_features();
        let sq: Vec<f64> = (0..n)
            .into_par_iter()
            .with_min_len(64)
            .map_init(
                || (RowBuf::new(), Densified::new(1, d)),
                |(buf, dense), i| {
                    let r = x.row(i, buf);
                    dense.load(0, r);
                    r.dot(dense.slot(0))
                },
            )
            .collect();
        let diag: Vec<f64> = sq.iter().map(|&s| f.from_dot(s, s, s)).collect();
        if let Some((i, v)) = diag.iter().enumerate().find(|(_, v)| !(v.is_finite() && **v >= 0.0)) {
            return Err(Error::input(
                "X",
                format!(
                    "kernel diagonal K[{i}, {i}] = {v} must be finite and >= 0 ({} kernel not positive semidefinite?)",
                    f.name()
                ),
            ));
        }
        let nnz: usize = (0..n).map(|i| x.row_nnz(i)).sum();
        let dense_rows = matches!(x.row(0, &mut RowBuf::new()), Row::Dense(_));
        Ok(Self { x, f, sq, diag, row_work: (nnz / n).max(1), dense_rows })
    }

    pub fn function(&self) -> KernelFunction {
        self.f
    }

    pub fn design(&self) -> &'a D {
        self.x
    }

    /// ‖x_i‖² (as the kernel computes inner products).
    pub fn sq_norms(&self) -> &[f64] {
        &self.sq
    }

    /// The cross kernel for prediction: out[r·n + j] = k(z_{rows.start + r}, x_j), i.e. the
    /// rows `rows` of K(Z, X), row-major with n = `self.n()` entries per row. Blocked and
    /// parallel like [`KernelSource::columns_into`]; call it on slices of `rows` to bound
    /// memory.
    pub fn cross_into<Q: Design>(&self, z: &Q, rows: Range<usize>, out: &mut [f64]) -> Result<()> {
        if z.n_features() != self.x.n_features() {
            return Err(Error::input(
                "X",
                format!("has {} features, but the kernel was fitted on {}", z.n_features(), self.x.n_features()),
            ));
        }
        if rows.end > z.n_rows() || rows.start > rows.end {
            return Err(Error::input("X", format!("rows {rows:?} out of range for {} examples", z.n_rows())));
        }
        if out.len() != rows.len() * self.n() {
            return Err(Error::input(
                "out",
                format!("must hold {} x {} values, got {}", rows.len(), self.n(), out.len()),
            ));
        }
        let idx: Vec<usize> = rows.collect();
        self.block_into(z, &idx, out, block_len(self.x.n_features()));
        Ok(())
    }

    /// out[b·n + j] = k(x_j, q_{idx[b]}): in blocks of `bsz` query rows whose parallel
    /// tasks are ranges of rows of X, or (dense X with d < 32 and enough columns) one
    /// parallel task per column.
    fn block_into<Q: Design>(&self, q: &Q, idx: &[usize], out: &mut [f64], bsz: usize) {
        let n = self.n();
        assert_eq!(out.len(), idx.len() * n, "columns_into: output must hold idx.len() columns of n entries");
        if idx.is_empty() {
            return;
        }
        let d = self.x.n_features();
        if self.dense_rows && d < TILE_MIN_FEATURES && idx.len() >= 2 * rayon::current_num_threads() {
            // Short rows: re-reading X per column costs little, so columns run in
            // parallel whole (no per-task overhead).
            out.par_chunks_mut(n).zip(idx.par_iter()).for_each_init(
                || (RowBuf::new(), <[RowBuf; 4]>::default(), Densified::new(1, d)),
                |(buf, bufs, dense), (col, &i)| {
                    let r = q.row(i, buf);
                    dense.load(0, r);
                    self.fill_rows(dense.slot(0), r.dot(dense.slot(0)), |t| t, col, bufs);
                },
            );
            return;
        }
        let bsz = bsz.clamp(1, idx.len());
        let mut dense = Densified::new(bsz, d);
        let mut q_sq = vec![0.0; bsz];
        let mut buf = RowBuf::new();
        for (block, out_block) in idx.chunks(bsz).zip(out.chunks_mut(bsz * n)) {
            for (b, &i) in block.iter().enumerate() {
                let r = q.row(i, &mut buf);
                dense.load(b, r);
                q_sq[b] = r.dot(dense.slot(b));
            }
            let rows = (TASK_WORK / (self.row_work * block.len())).clamp(MIN_TASK_ROWS, n.max(MIN_TASK_ROWS));
            // Task t owns rows t·rows.. of every column of the block.
            let mut tasks: Vec<Vec<&mut [f64]>> =
                (0..n.div_ceil(rows)).map(|_| Vec::with_capacity(block.len())).collect();
            for col in out_block.chunks_mut(n) {
                for (task, piece) in tasks.iter_mut().zip(col.chunks_mut(rows)) {
                    task.push(piece);
                }
            }
            let (dense, q_sq) = (&dense, &q_sq[..block.len()]);
            tasks.into_par_iter().enumerate().for_each_init(
                || (<[RowBuf; 4]>::default(), Densified::default()),
                |(bufs, tile), (t, mut pieces)| self.block_task(t * rows, &mut pieces, dense, q_sq, bufs, tile),
            );
        }
    }

    /// One task of `block_into`: pieces[b][jj] = k(x_{start + jj}, q_b) for the block's
    /// densified query rows q_b.
    ///
    /// Dense X, at least four query rows and d ≥ 32: the task's rows are densified into
    /// `tile` (~100 KB, stays in L2) and visited once per group of four query rows (~25 KB
    /// for d = 784, stays in L1), so each L2 load of x_j feeds four multiply-adds. Other
    /// dense cases: row groups of four against each query row. Sparse X: row by row (each
    /// row converted once for the whole block).
    fn block_task(
        &self,
        start: usize,
        pieces: &mut [&mut [f64]],
        dense: &Densified,
        q_sq: &[f64],
        bufs: &mut [RowBuf; 4],
        tile: &mut Densified,
    ) {
        let len = pieces[0].len();
        let (sq, f) = (&self.sq[start..start + len], self.f);
        if self.dense_rows && (q_sq.len() < 4 || self.x.n_features() < TILE_MIN_FEATURES) {
            for (b, piece) in pieces.iter_mut().enumerate() {
                self.fill_rows(dense.slot(b), q_sq[b], |t| start + t, piece, bufs);
            }
            return;
        }
        if !self.dense_rows {
            for (jj, &sq_j) in sq.iter().enumerate() {
                let r = self.x.row(start + jj, &mut bufs[0]);
                for (b, piece) in pieces.iter_mut().enumerate() {
                    piece[jj] = f.prepare(r.dot(dense.slot(b)), sq_j, q_sq[b]);
                }
            }
            pieces.iter_mut().for_each(|piece| f.finish(piece));
            return;
        }
        if tile.d != self.x.n_features() || tile.full.len() < len {
            *tile = Densified::new(len, self.x.n_features());
        }
        for jj in 0..len {
            tile.load(jj, self.x.row(start + jj, &mut bufs[0]));
        }
        let mut b = 0;
        while b + 4 <= q_sq.len() {
            let ys = [0, 1, 2, 3].map(|k| dense.slot(b + k));
            for (jj, &sq_j) in sq.iter().enumerate() {
                let v = dot4(tile.slot(jj), ys);
                for k in 0..4 {
                    pieces[b + k][jj] = f.prepare(v[k], sq_j, q_sq[b + k]);
                }
            }
            b += 4;
        }
        for b in b..q_sq.len() {
            for (jj, &sq_j) in sq.iter().enumerate() {
                pieces[b][jj] = f.prepare(dot(tile.slot(jj), dense.slot(b)), sq_j, q_sq[b]);
            }
        }
        pieces.iter_mut().for_each(|piece| f.finish(piece));
    }

    /// out[t] = k(x_{row(t)}, x_i) for t < out.len(), serial, with this thread's scratch.
    fn fill(&self, i: usize, row: impl Fn(usize) -> usize, out: &mut [f64]) {
        with_scratch(self.x.n_features(), |s| {
            let Scratch { row_i, rows, dense } = s;
            dense.load(0, self.x.row(i, row_i));
            self.fill_rows(dense.slot(0), self.sq[i], row, out, rows)
        })
    }

    /// out[t] = k(x_{row(t)}, q) for a densified query row q with ‖q‖² = `sq_q`. Dense rows
    /// go four at a time through [`dot4`] (q loaded once per four multiply-adds).
    fn fill_rows(&self, q: &[f64], sq_q: f64, row: impl Fn(usize) -> usize, out: &mut [f64], bufs: &mut [RowBuf; 4]) {
        let [b0, b1, b2, b3] = bufs;
        let mut t = 0;
        while t + 4 <= out.len() {
            let js = [row(t), row(t + 1), row(t + 2), row(t + 3)];
            let r = [self.x.row(js[0], b0), self.x.row(js[1], b1), self.x.row(js[2], b2), self.x.row(js[3], b3)];
            let dots = match r {
                [Row::Dense(a), Row::Dense(b), Row::Dense(c), Row::Dense(d)] => dot4(q, [a, b, c, d]),
                _ => r.map(|r| r.dot(q)),
            };
            for k in 0..4 {
                out[t + k] = self.f.prepare(dots[k], self.sq[js[k]], sq_q);
            }
            t += 4;
        }
        for (t, o) in out.iter_mut().enumerate().skip(t) {
            let j = row(t);
            *o = self.f.prepare(self.x.row(j, b0).dot(q), self.sq[j], sq_q);
        }
        self.f.finish(out);
    }
}

/// Query rows per block for d features.
fn block_len(d: usize) -> usize {
    (BLOCK_BYTES / (8 * d.max(1))).clamp(1, MAX_BLOCK)
}

/// The cross kernel K(Z, X) (n_z × n_x, row-major) that a kernel model fitted on the
/// dense rows `x` (`x_features` wide) predicts the dense rows `z` with. Both are checked
/// for NaN and infinity first: an RBF kernel's diagonal (always 1) would not show them.
pub fn cross_kernel(z: &[f64], z_features: usize, x: &[f64], x_features: usize, f: KernelFunction) -> Result<Vec<f64>> {
    check_finite_rows(z, z_features, "X")?;
    check_finite_rows(x, x_features, "X_fit")?;
    let rows = |data: &[f64], d: usize| data.len().checked_div(d).unwrap_or(0);
    let (test, train) =
        (DenseRows::new(z, rows(z, z_features), z_features)?, DenseRows::new(x, rows(x, x_features), x_features)?);
    let kernel = DataKernel::new(&train, f)?;
    let mut out = vec![0.0; test.n_rows() * train.n_rows()];
    kernel.cross_into(&test, 0..test.n_rows(), &mut out)?;
    Ok(out)
}

impl<D: Design> KernelSource for DataKernel<'_, D> {
    fn n(&self) -> usize {
        self.sq.len()
    }

    fn diag(&self, i: usize) -> f64 {
        self.diag[i]
    }

    fn entry_work(&self) -> usize {
        self.row_work
    }

    fn column_into(&self, i: usize, out: &mut [f64]) {
        assert_eq!(out.len(), self.n(), "column_into: output must have n entries");
        self.fill(i, |t| t, out)
    }

    fn entries_into(&self, i: usize, rows: &[usize], out: &mut [f64]) {
        assert_eq!(out.len(), rows.len(), "entries_into: output must have one entry per row");
        self.fill(i, |t| rows[t], out)
    }

    fn columns_into(&self, idx: &[usize], out: &mut [f64]) {
        self.block_into(self.x, idx, out, block_len(self.x.n_features()))
    }
}

/// Rows densified into `f64` slots of width d. Entries a load did not write stay 0, and
/// reloading a slot clears only what the previous load wrote, so a sparse row costs
/// O(nnz) however large d is.
#[derive(Debug, Default)]
struct Densified {
    d: usize,
    data: Vec<f64>,
    /// Slot fully written by a dense row.
    full: Vec<bool>,
    /// Positions written by a sparse row.
    written: Vec<Vec<u32>>,
}

impl Densified {
    fn new(slots: usize, d: usize) -> Self {
        Self { d, data: vec![0.0; slots * d], full: vec![false; slots], written: vec![Vec::new(); slots] }
    }

    fn load(&mut self, s: usize, row: Row) {
        let d = self.d;
        let seg = &mut self.data[s * d..(s + 1) * d];
        if let Row::Dense(x) = row {
            if x.len() == d {
                seg.copy_from_slice(x);
                self.full[s] = true;
                self.written[s].clear();
                return;
            }
        }
        if self.full[s] {
            seg.fill(0.0);
        } else {
            self.written[s].iter().for_each(|&k| seg[k as usize] = 0.0);
        }
        self.written[s].clear();
        match row {
            Row::Dense(x) => {
                seg[..x.len()].copy_from_slice(x);
                self.full[s] = true;
            }
            Row::Sparse { indices, values } => {
                // `+=`: duplicate indices (non-canonical CSR) add up, as in scipy.
                indices.iter().zip(values).for_each(|(&k, &v)| seg[k as usize] += v);
                self.written[s].extend_from_slice(indices);
                self.full[s] = false;
            }
        }
    }

    #[inline]
    fn slot(&self, s: usize) -> &[f64] {
        &self.data[s * self.d..(s + 1) * self.d]
    }
}

/// Per-thread scratch of the serial paths (`column_into`, `entries_into`).
#[derive(Debug, Default)]
struct Scratch {
    row_i: RowBuf,
    rows: [RowBuf; 4],
    dense: Densified,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// Runs `body` with this thread's scratch sized for d features (allocation-free once
/// warm). A re-entrant call (not made by this module) gets a fresh scratch instead of
/// panicking.
fn with_scratch<R>(d: usize, body: impl FnOnce(&mut Scratch) -> R) -> R {
    let run = |s: &mut Scratch| {
        if s.dense.d != d || s.dense.full.is_empty() {
            s.dense = Densified::new(1, d);
        }
        body(s)
    };
    SCRATCH.with(|cell| match cell.try_borrow_mut() {
        Ok(mut s) => run(&mut s),
        Err(_) => run(&mut Scratch::default()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{CsrRows, DenseRows};
    use crate::rng::SplitMix64;

    fn random_dense(n: usize, d: usize, density: f64, seed: u64) -> Vec<f64> {
        let mut rng = SplitMix64::new(seed);
        let mut unif = move || (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        (0..n * d).map(|_| if unif() < density { 2.0 * unif() - 1.0 } else { 0.0 }).collect()
    }

    fn to_csr(x: &[f64], d: usize) -> (Vec<i64>, Vec<i64>, Vec<f64>) {
        let (mut indptr, mut indices, mut data) = (vec![0i64], Vec::new(), Vec::new());
        for row in x.chunks(d) {
            for (j, &v) in row.iter().enumerate().filter(|(_, v)| **v != 0.0) {
                indices.push(j as i64);
                data.push(v);
            }
            indptr.push(indices.len() as i64);
        }
        (indptr, indices, data)
    }

    const KERNELS: [KernelFunction; 3] = [
        KernelFunction::Linear,
        KernelFunction::Rbf { gamma: 0.3 },
        KernelFunction::Poly { gamma: 0.7, degree: 3, coef0: 1.0 },
    ];

    /// The cross kernel is the formula's, and refuses NaN or infinity in either matrix
    /// (an RBF kernel would not show them otherwise).
    #[test]
    fn cross_kernel_checks_both_matrices() {
        let (d, x, z) = (3, random_dense(7, 3, 0.8, 1), random_dense(4, 3, 0.8, 2));
        let f = KernelFunction::Rbf { gamma: 0.3 };
        let out = cross_kernel(&z, d, &x, d, f).unwrap();
        for (r, zr) in z.chunks(d).enumerate() {
            for (j, xj) in x.chunks(d).enumerate() {
                assert!((out[r * 7 + j] - f.eval(zr, xj)).abs() < 1e-14);
            }
        }
        let mut bad = x.clone();
        bad[4] = f64::INFINITY;
        assert!(cross_kernel(&z, d, &bad, d, f).unwrap_err().to_string().starts_with("X_fit: contains NaN"));
        assert!(cross_kernel(&bad, d, &x, d, f).unwrap_err().to_string().starts_with("X: contains NaN"));
        assert!(cross_kernel(&z[..8], 2, &x, d, f).unwrap_err().to_string().starts_with("X: has 2 features"));
    }

    /// All access paths against the naive formula on `reference` rows, and against each
    /// other bit for bit.
    fn check_source<D: Design>(x: &D, reference: &[f64], d: usize, tol: f64) {
        let n = x.n_rows();
        for f in KERNELS {
            let k = DataKernel::new(x, f).unwrap();
            let naive = |i: usize, j: usize| f.eval(&reference[i * d..(i + 1) * d], &reference[j * d..(j + 1) * d]);
            let mut col = vec![0.0; n];
            for i in 0..n {
                k.column_into(i, &mut col);
                for (j, &v) in col.iter().enumerate() {
                    let want = naive(i, j);
                    assert!((v - want).abs() <= tol * (1.0 + want.abs()), "{f:?} K[{j},{i}] = {v}, want {want}");
                }
                assert_eq!(col[i], k.diag(i));
                let rows = [n - 1, 0, i, 3];
                let mut e = [0.0; 4];
                k.entries_into(i, &rows, &mut e);
                for (t, &j) in rows.iter().enumerate() {
                    assert_eq!(e[t].to_bits(), col[j].to_bits());
                }
            }
            if let KernelFunction::Rbf { .. } = f {
                assert!((0..n).all(|i| k.diag(i) == 1.0));
            }
            // Blocked (several block sizes, so several blocks and a ragged last one).
            let idx = [4, 0, n - 1, 4, 7, 2, 11];
            for bsz in [1, 3, MAX_BLOCK] {
                let mut blocked = vec![0.0; idx.len() * n];
                k.block_into(x, &idx, &mut blocked, bsz);
                for (b, &i) in idx.iter().enumerate() {
                    k.column_into(i, &mut col);
                    assert!(col.iter().zip(&blocked[b * n..(b + 1) * n]).all(|(u, v)| u.to_bits() == v.to_bits()));
                }
            }
            // Public entry point: whole-column tasks (7 columns) or row tasks (1, 2).
            for cols in [&idx[..], &idx[..1], &idx[..2]] {
                let mut blocked = vec![0.0; cols.len() * n];
                k.columns_into(cols, &mut blocked);
                for (b, &i) in cols.iter().enumerate() {
                    k.column_into(i, &mut col);
                    assert_eq!(&blocked[b * n..(b + 1) * n], &col[..]);
                }
            }
            let mut cross = vec![0.0; 3 * n];
            k.cross_into(x, 2..5, &mut cross).unwrap();
            for r in 0..3 {
                k.column_into(2 + r, &mut col);
                assert_eq!(&cross[r * n..(r + 1) * n], &col[..]);
            }
        }
    }

    #[test]
    fn dense_f64_f32_and_csr_match_the_formulas() {
        let (n, d) = (37, 6);
        let x = random_dense(n, d, 0.6, 1);
        check_source(&DenseRows::new(&x, n, d).unwrap(), &x, d, 1e-13);
        let (indptr, indices, data) = to_csr(&x, d);
        check_source(&CsrRows::new(&indptr, &indices, &data, d).unwrap(), &x, d, 1e-13);
        let x32: Vec<f32> = x.iter().map(|&v| v as f32).collect();
        let x32_as_64: Vec<f64> = x32.iter().map(|&v| v as f64).collect();
        check_source(&DenseRows::new(&x32, n, d).unwrap(), &x32_as_64, d, 1e-13);
        let data32: Vec<f32> = data.iter().map(|&v| v as f32).collect();
        let (ip32, ix32): (Vec<i32>, Vec<i32>) =
            (indptr.iter().map(|&v| v as i32).collect(), indices.iter().map(|&v| v as i32).collect());
        check_source(&CsrRows::new(&ip32, &ix32, &data32, d).unwrap(), &x32_as_64, d, 1e-13);
    }

    #[test]
    fn dense_blocks_over_several_tasks() {
        // d large enough for the tiled path, n for several tasks; 9 columns: two groups
        // of four and one left over.
        let (n, d) = (2500, TILE_MIN_FEATURES + 3);
        let x: Vec<f32> = random_dense(n, d, 1.0, 7).iter().map(|&v| v as f32).collect();
        let rows = DenseRows::new(&x, n, d).unwrap();
        let k = DataKernel::new(&rows, KernelFunction::Rbf { gamma: 0.05 }).unwrap();
        assert!(TASK_WORK / (k.row_work * 9) < n / 2);
        let idx = [0, 2499, 17, 1000, 5, 6, 7, 8, 9];
        let mut blocked = vec![0.0; idx.len() * n];
        k.columns_into(&idx, &mut blocked);
        let mut col = vec![0.0; n];
        for (b, &i) in idx.iter().enumerate() {
            k.column_into(i, &mut col);
            assert_eq!(&blocked[b * n..(b + 1) * n], &col[..]);
            let xi: Vec<f64> = x[i * d..(i + 1) * d].iter().map(|&v| v as f64).collect();
            for j in (0..n).step_by(97) {
                let xj: Vec<f64> = x[j * d..(j + 1) * d].iter().map(|&v| v as f64).collect();
                assert!((col[j] - k.function().eval(&xi, &xj)).abs() < 1e-13);
            }
        }
    }

    #[test]
    fn wide_sparse_rows_and_parallel_tasks() {
        // d large enough for one-row blocks, n large enough for several tasks.
        let (n, d) = (300, 80_000);
        let mut rng = SplitMix64::new(5);
        let (mut indptr, mut indices, mut data) = (vec![0i32], Vec::new(), Vec::new());
        for _ in 0..n {
            let mut cols: Vec<i32> = (0..5).map(|_| rng.below(d) as i32).collect();
            cols.sort();
            cols.dedup();
            for c in cols {
                indices.push(c);
                data.push((rng.below(1000) as f64 - 500.0) / 100.0);
            }
            indptr.push(indices.len() as i32);
        }
        let x = CsrRows::new(&indptr, &indices, &data, d).unwrap();
        let k = DataKernel::new(&x, KernelFunction::Rbf { gamma: 0.05 }).unwrap();
        assert_eq!(block_len(d), 1);
        let idx: Vec<usize> = (0..n).step_by(37).collect();
        let mut blocked = vec![0.0; idx.len() * n];
        k.columns_into(&idx, &mut blocked);
        let mut col = vec![0.0; n];
        for (b, &i) in idx.iter().enumerate() {
            k.column_into(i, &mut col);
            assert_eq!(&blocked[b * n..(b + 1) * n], &col[..]);
            assert_eq!(col[i], 1.0);
        }
    }

    #[test]
    fn bad_inputs() {
        let x = [1.0f64, 2.0, 3.0, 4.0];
        let d = DenseRows::new(&x, 2, 2).unwrap();
        assert!(DataKernel::new(&d, KernelFunction::Rbf { gamma: -1.0 }).is_err());
        // (⟨x, x⟩ − 100)³ < 0: not a kernel.
        assert!(DataKernel::new(&d, KernelFunction::Poly { gamma: 1.0, degree: 3, coef0: -100.0 }).is_err());
        let empty = DenseRows::new(&x[..0], 0, 2).unwrap();
        assert!(DataKernel::new(&empty, KernelFunction::Linear).is_err());
        let k = DataKernel::new(&d, KernelFunction::Linear).unwrap();
        let z = DenseRows::new(&x[..3], 1, 3).unwrap();
        assert!(k.cross_into(&z, 0..1, &mut [0.0; 2]).is_err());
        assert!(k.cross_into(&d, 0..3, &mut [0.0; 6]).is_err());
        assert!(k.cross_into(&d, 0..1, &mut [0.0; 3]).is_err());
    }
}
