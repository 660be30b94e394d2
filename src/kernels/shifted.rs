//! A kernel plus a constant, K(x, x') + s: the kernel of φ(x) augmented by one constant
//! feature √s, which is how an intercept enters a dual without a bias term (M3L §3,
//! "we implicitly simulate b by adding an extra dimension to the feature vector").

use super::KernelSource;

/// `inner` + `shift` in every entry.
pub struct ShiftedKernel<'a, S: KernelSource + ?Sized> {
    pub inner: &'a S,
    pub shift: f64,
}

impl<S: KernelSource + ?Sized> KernelSource for ShiftedKernel<'_, S> {
    fn n(&self) -> usize {
        self.inner.n()
    }
    fn diag(&self, i: usize) -> f64 {
        self.inner.diag(i) + self.shift
    }
    fn entry_work(&self) -> usize {
        self.inner.entry_work()
    }
    fn column_into(&self, i: usize, out: &mut [f64]) {
        self.inner.column_into(i, out);
        out.iter_mut().for_each(|v| *v += self.shift);
    }
    fn entries_into(&self, i: usize, rows: &[usize], out: &mut [f64]) {
        self.inner.entries_into(i, rows, out);
        out.iter_mut().for_each(|v| *v += self.shift);
    }
    fn columns_into(&self, idx: &[usize], out: &mut [f64]) {
        self.inner.columns_into(idx, out);
        out.iter_mut().for_each(|v| *v += self.shift);
    }
}
