//! Row-batched drivers: apply a one-row kernel to every row of a row-major matrix,
//! in parallel on the current rayon pool (one [`Workspace`] per worker task) or,
//! with `parallel = false`, serially on the calling thread with one workspace.
//!
//! Each row is processed exactly as the one-row function would, so batched results
//! equal row-by-row results bit for bit, whatever the number of threads.
//!
//! Also the checks for NaN and infinity of row-major data: a whole matrix on the
//! current pool ([`check_finite_rows`]) or one row inside a batch ([`finite_row`]).

use rayon::prelude::*;

use crate::projections::Workspace;
use crate::real::Real;
use crate::{Error, Result};

/// Rows per rayon task: enough work per task (~16k elements) to amortise scheduling.
fn rows_per_task(m: usize) -> usize {
    (16_384 / m.max(1)).max(1)
}

fn check_shape<T>(data: &[T], m: usize, name: &'static str) -> Result<usize> {
    if m == 0 || data.len() % m != 0 {
        return Err(Error::input(name, format!("length {} is not a multiple of the row length {m}", data.len())));
    }
    Ok(data.len() / m)
}

/// Below this many entries a row batch runs on the calling thread: waking a pool's
/// sleeping workers costs tens of microseconds, the work of a few thousand entries.
const POOL_WORTHWHILE: usize = 32_768;

/// Whether a batch of `entries` values is worth running in parallel (on a pool of more
/// than one thread); the results are the same either way.
pub fn worth_a_pool(entries: usize, threads: Option<usize>) -> bool {
    threads != Some(1) && entries >= POOL_WORTHWHILE
}

/// Runs `work(parallel)` on the pool of `threads` when a batch of `entries` values is
/// worth one ([`worth_a_pool`]), else on the calling thread with `parallel` false.
pub fn on_pool<R: Send>(entries: usize, threads: Option<usize>, work: impl FnOnce(bool) -> R + Send) -> R {
    let parallel = worth_a_pool(entries, threads);
    crate::threads::install(threads.filter(|_| parallel), || work(parallel))
}

/// The rows of a 1-D (one row) or 2-D array argument `name` of shape `shape`, as one
/// row-major slice; none may be empty.
#[derive(Debug, Clone, Copy)]
pub struct Rows<'a, T> {
    pub data: &'a [T],
    pub n_rows: usize,
    pub row_len: usize,
    pub shape: &'a [usize],
    pub name: &'static str,
}

impl<'a, T: Real> Rows<'a, T> {
    /// The rows of `data`, checked against its `shape`.
    pub fn new(data: &'a [T], shape: &'a [usize], name: &'static str) -> Result<Self> {
        let (n_rows, row_len) = match *shape {
            [m] => (1, m),
            [n, m] => (n, m),
            _ => {
                let ndim = shape.len();
                return Err(Error::input(
                    name,
                    format!("expected a 1-D array or a 2-D batch of rows, got a {ndim}-D array"),
                ));
            }
        };
        if n_rows == 0 || row_len == 0 {
            return Err(Error::input(name, format!("is empty (shape {shape:?})")));
        }
        if n_rows.checked_mul(row_len) != Some(data.len()) {
            return Err(Error::input(name, format!("{} values are not of shape {shape:?}", data.len())));
        }
        Ok(Self { data, n_rows, row_len, shape, name })
    }

    /// The boolean mask `arg` of these rows' shape (`data` of shape `shape`), one row per
    /// row.
    pub fn mask_of(&self, data: Vec<bool>, shape: &[usize], arg: &'static str) -> Result<RowMask> {
        if shape != self.shape {
            let (name, want) = (self.name, self.shape);
            return Err(Error::input(arg, format!("has shape {shape:?} but {name} has shape {want:?}")));
        }
        Ok(RowMask::new(data, self.row_len))
    }

    /// [`map_rows`] of `f` (writing an output row) on these rows, a row with NaN or
    /// infinity refused ([`finite_row`]).
    pub fn map<R>(
        &self,
        out: &mut [T],
        parallel: bool,
        f: impl Fn(usize, &[T], &mut [T], &mut Workspace) -> Result<R> + Sync,
    ) -> Result<()> {
        map_rows(self.data, self.row_len, out, parallel, |i, row, o, ws| {
            finite_row(row, i, self.name, f(i, row, o, ws)).map(drop)
        })
    }

    /// [`loss_rows`] of `f` (a loss, writing the gradient row into `grad`) on these rows,
    /// a row with NaN or infinity refused ([`finite_row`]): the losses, one per row.
    pub fn losses(
        &self,
        grad: &mut [T],
        parallel: bool,
        f: impl Fn(usize, &[T], &mut [T], &mut Workspace) -> Result<f64> + Sync,
    ) -> Result<Vec<T>> {
        let mut loss = vec![T::from_f64(0.0); self.n_rows];
        loss_rows(self.data, self.row_len, &mut loss, grad, parallel, |i, row, g, ws| {
            finite_row(row, i, self.name, f(i, row, g, ws))
        })?;
        Ok(loss)
    }
}

/// A boolean mask with one row per row of a batch: `mask[i]` is row i's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowMask {
    data: Vec<bool>,
    row_len: usize,
}

impl RowMask {
    /// The rows of `row_len` entries of `data` (row-major).
    pub fn new(data: Vec<bool>, row_len: usize) -> Self {
        Self { data, row_len }
    }
}

impl std::ops::Index<usize> for RowMask {
    type Output = [bool];
    fn index(&self, row: usize) -> &[bool] {
        &self.data[row * self.row_len..(row + 1) * self.row_len]
    }
}

/// `out[i] = f(i, x[i])` for each row `i` of the `n × m` row-major `x`.
pub fn map_rows<T, F>(x: &[T], m: usize, out: &mut [T], parallel: bool, f: F) -> Result<()>
where
    T: Real,
    F: Fn(usize, &[T], &mut [T], &mut Workspace) -> Result<()> + Sync,
{
    check_shape(x, m, "x")?;
    if out.len() != x.len() {
        return Err(Error::input("out", "must have the shape of x"));
    }
    if !parallel {
        let mut ws = Workspace::with_capacity(m);
        return x
            .chunks(m)
            .zip(out.chunks_mut(m))
            .enumerate()
            .try_for_each(|(i, (row, out_row))| f(i, row, out_row, &mut ws));
    }
    x.par_chunks(m)
        .zip(out.par_chunks_mut(m))
        .enumerate()
        .with_min_len(rows_per_task(m))
        .try_for_each_init(|| Workspace::with_capacity(m), |ws, (i, (row, out_row))| f(i, row, out_row, ws))
}

/// For each row `i`: `loss[i] = f(i, z[i], grad[i])`, the kernel writing the gradient row.
pub fn loss_rows<T, F>(z: &[T], m: usize, loss: &mut [T], grad: &mut [T], parallel: bool, f: F) -> Result<()>
where
    T: Real,
    F: Fn(usize, &[T], &mut [T], &mut Workspace) -> Result<f64> + Sync,
{
    let n = check_shape(z, m, "z")?;
    if grad.len() != z.len() || loss.len() != n {
        return Err(Error::input("grad", "output buffers do not match the shape of z"));
    }
    if !parallel {
        let mut ws = Workspace::with_capacity(m);
        return z.chunks(m).zip(grad.chunks_mut(m)).zip(loss.iter_mut()).enumerate().try_for_each(
            |(i, ((row, grad_row), l))| {
                *l = T::from_f64(f(i, row, grad_row, &mut ws)?);
                Ok(())
            },
        );
    }
    z.par_chunks(m)
        .zip(grad.par_chunks_mut(m))
        .zip(loss.par_iter_mut())
        .enumerate()
        .with_min_len(rows_per_task(m))
        .try_for_each_init(
            || Workspace::with_capacity(m),
            |ws, (i, ((row, grad_row), l))| {
                *l = T::from_f64(f(i, row, grad_row, ws)?);
                Ok(())
            },
        )
}

/// For each row `i`: `values[i] = f(i, z[i])` (a scalar per row, no gradient).
pub fn reduce_rows<T, F>(z: &[T], m: usize, values: &mut [T], parallel: bool, f: F) -> Result<()>
where
    T: Real,
    F: Fn(usize, &[T], &mut Workspace) -> Result<f64> + Sync,
{
    let n = check_shape(z, m, "scores")?;
    if values.len() != n {
        return Err(Error::input("values", "must have one entry per row"));
    }
    if !parallel {
        let mut ws = Workspace::with_capacity(m);
        return z.chunks(m).zip(values.iter_mut()).enumerate().try_for_each(|(i, (row, v))| {
            *v = T::from_f64(f(i, row, &mut ws)?);
            Ok(())
        });
    }
    z.par_chunks(m).zip(values.par_iter_mut()).enumerate().with_min_len(rows_per_task(m)).try_for_each_init(
        || Workspace::with_capacity(m),
        |ws, (i, (row, v))| {
            *v = T::from_f64(f(i, row, ws)?);
            Ok(())
        },
    )
}

/// Whether every value is finite: v·0 is 0 for finite v and NaN otherwise, and
/// lane-wise sums vectorise.
fn all_finite<T: Real>(values: &[T]) -> bool {
    const LANES: usize = 8;
    let mut acc = [0.0f64; LANES];
    let mut chunks = values.chunks_exact(LANES);
    for chunk in chunks.by_ref() {
        for (a, v) in acc.iter_mut().zip(chunk) {
            *a += v.to_f64() * 0.0;
        }
    }
    let tail: f64 = chunks.remainder().iter().map(|v| v.to_f64() * 0.0).sum();
    acc.iter().sum::<f64>() + tail == 0.0
}

/// The position of the first NaN or infinity in `values`, searched in parallel on the
/// current pool.
pub fn first_non_finite<T: Real>(values: &[T]) -> Option<usize> {
    const BLOCK: usize = 4096;
    values
        .par_chunks(BLOCK)
        .enumerate()
        .find_first(|(_, block)| !all_finite(block))
        .map(|(b, block)| b * BLOCK + block.iter().position(|v| !v.to_f64().is_finite()).unwrap_or(0))
}

/// Checks a row-major matrix (`row_len` values per row) for NaN and infinity on the
/// current pool; the error names the first bad entry's row and column.
pub fn check_finite_rows<T: Real>(data: &[T], row_len: usize, name: &'static str) -> Result<()> {
    match first_non_finite(data) {
        None => Ok(()),
        Some(at) => {
            let row_len = row_len.max(1);
            Err(Error::input(name, format!("contains NaN or infinity (row {}, column {})", at / row_len, at % row_len)))
        }
    }
}

/// The labels `y` of the rows of `x` (`n_rows` rows of `m` entries; `name` names it),
/// each checked to lie in [0, m): one per row of a batch (`batch`; the error names the
/// row), else the one label of a single row.
pub fn labels(y: &[i64], (name, n_rows, m): (&str, usize, usize), batch: bool) -> Result<Vec<usize>> {
    if batch && y.len() != n_rows {
        return Err(Error::param("y", format!("has {} labels but {name} has {n_rows} rows", y.len())));
    }
    let in_range = |(row, &label): (usize, &i64)| {
        usize::try_from(label).ok().filter(|&l| l < m).ok_or_else(|| {
            let at = if batch { format!(" at row {row}") } else { String::new() };
            Error::param("y", format!("label {label}{at} out of range [0, {m})"))
        })
    };
    y.iter().enumerate().map(in_range).collect()
}

/// `result`, the kernel's on row `index`, unless the row holds NaN or infinity. Called
/// inside the batch right after the kernel has read the row (so the check runs on all
/// threads and finds the row in cache); a failed check wins over the kernel's result.
/// The kernels cannot panic or loop on non-finite input, and a panic would be caught.
pub fn finite_row<T: Real, R>(row: &[T], index: usize, name: &'static str, result: Result<R>) -> Result<R> {
    if all_finite(row) {
        return result;
    }
    let column = row.iter().position(|v| !v.to_f64().is_finite()).unwrap_or(0);
    Err(Error::input(name, format!("contains NaN or infinity (row {index}, column {column})")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::projections::simplex;

    #[test]
    fn a_mask_gives_its_rows_and_small_batches_stay_on_the_calling_thread() {
        let mask = RowMask::new(vec![true, false, false, false, true, true], 3);
        assert_eq!((&mask[0], &mask[1]), (&[true, false, false][..], &[false, true, true][..]));
        assert!(!on_pool(10, Some(4), |parallel| parallel));
        assert!(!on_pool(1 << 20, Some(1), |parallel| parallel));
        assert!(on_pool(1 << 20, Some(2), |parallel| parallel && rayon::current_num_threads() == 2));
    }

    #[test]
    fn rows_are_one_or_a_batch_and_never_empty() {
        let data = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        let rows = Rows::new(&data, &[2, 3], "x").unwrap();
        assert_eq!((rows.n_rows, rows.row_len), (2, 3));
        assert_eq!(Rows::new(&data, &[6], "x").map(|r| (r.n_rows, r.row_len)), Ok((1, 6)));
        let cube = Rows::new(&data, &[1, 2, 3], "x").unwrap_err().to_string();
        assert_eq!(cube, "x: expected a 1-D array or a 2-D batch of rows, got a 3-D array");
        assert_eq!(Rows::new(&data[..0], &[0, 3], "z").unwrap_err().to_string(), "z: is empty (shape [0, 3])");
        assert!(Rows::new(&data, &[2, 2], "x").is_err());
        let mask = rows.mask_of(vec![true; 6], &[2, 3], "positive").unwrap();
        assert_eq!(&mask[1], &[true; 3][..]);
        let shape = rows.mask_of(vec![true; 6], &[3, 2], "positive").unwrap_err().to_string();
        assert_eq!(shape, "positive: has shape [3, 2] but x has shape [2, 3]");
    }

    #[test]
    fn labels_lie_below_the_row_length() {
        let x = |n_rows| ("z", n_rows, 6);
        assert_eq!(labels(&[0, 5, 2], x(3), true), Ok(vec![0, 5, 2]));
        let negative = labels(&[1, -1], x(2), true).unwrap_err().to_string();
        assert_eq!(negative, "y: label -1 at row 1 out of range [0, 6)");
        assert_eq!(labels(&[6], x(1), false).unwrap_err().to_string(), "y: label 6 out of range [0, 6)");
        assert_eq!(labels(&[0], x(2), true).unwrap_err().to_string(), "y: has 1 labels but z has 2 rows");
    }

    #[test]
    fn batch_equals_row_by_row() {
        let m = 7;
        let x: Vec<f64> = (0..700).map(|i| ((i * 31 % 53) as f64 - 26.0) / 9.0).collect();
        let mut ws = Workspace::new();
        for parallel in [true, false] {
            let mut batched = vec![0.0; x.len()];
            map_rows(&x, m, &mut batched, parallel, |_, row, out, ws| simplex(row, 1.0, false, out, ws).map(|_| ()))
                .unwrap();
            for (row, expected) in x.chunks(m).zip(batched.chunks(m)) {
                let mut out = vec![0.0; m];
                simplex(row, 1.0, false, &mut out, &mut ws).unwrap();
                assert_eq!(out, expected);
            }
        }
    }
}
