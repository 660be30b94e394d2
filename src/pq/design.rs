//! Product-quantized rows as a design matrix: the linear solvers train on the codes.
//!
//! A row is decoded when a solver reads it (d values from M table lookups), so the
//! solvers see exactly the decoded matrix X̂ while memory holds one byte per sub-space
//! and row ("train compressed, predict uncompressed", Harchaoui et al. §4.2).

use super::codebooks::Codebooks;
use crate::data::{Design, Row, RowBuf};
use crate::Result;

/// The rows of X̂ given by `codes` (n × M) and the codebooks.
#[derive(Debug, Clone, Copy)]
pub struct CodedRows<'a> {
    books: Codebooks<'a>,
    codes: &'a [u8],
}

impl<'a> CodedRows<'a> {
    /// Checks the codes against the codebooks (whole rows, codes below ksub).
    pub fn new(books: Codebooks<'a>, codes: &'a [u8]) -> Result<Self> {
        books.check_codes(codes)?;
        Ok(Self { books, codes })
    }

    fn decode_into(&self, rows: std::ops::Range<usize>, out: &mut [f64]) {
        let (m, dsub) = (self.books.n_subspaces(), self.books.dsub());
        for (row_out, code) in
            out.chunks_exact_mut(m * dsub).zip(self.codes[rows.start * m..rows.end * m].chunks_exact(m))
        {
            for (q, (piece, &c)) in row_out.chunks_exact_mut(dsub).zip(code).enumerate() {
                let centroid = &self.books.subspace(q)[usize::from(c) * dsub..(usize::from(c) + 1) * dsub];
                piece.iter_mut().zip(centroid).for_each(|(p, &v)| *p = f64::from(v));
            }
        }
    }
}

impl Design for CodedRows<'_> {
    fn n_rows(&self) -> usize {
        self.codes.len() / self.books.n_subspaces()
    }
    fn n_features(&self) -> usize {
        self.books.dim()
    }
    fn row<'s>(&'s self, i: usize, buf: &'s mut RowBuf) -> Row<'s> {
        let out = buf.dense_mut(self.books.dim());
        self.decode_into(i..i + 1, out);
        Row::Dense(out)
    }
    fn dense_block<'s>(&'s self, rows: std::ops::Range<usize>, buf: &'s mut RowBuf) -> Option<&'s [f64]> {
        let out = buf.dense_mut(rows.len() * self.books.dim());
        self.decode_into(rows, out);
        Some(out)
    }
    fn row_nnz(&self, _i: usize) -> usize {
        self.books.dim()
    }
    fn coded(&self) -> Option<(&Codebooks<'_>, &[u8])> {
        Some((&self.books, self.codes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pq::{decode, encode, train, TrainOptions};
    use crate::rng::SplitMix64;

    /// Rows and blocks are the decoded matrix.
    #[test]
    fn rows_are_the_decoded_matrix() {
        let mut rng = SplitMix64::new(2);
        let (n, d) = (300, 12);
        let x: Vec<f64> = (0..n * d).map(|_| rng.next_f64()).collect();
        let trained = train(&x, d, 4, 3, &TrainOptions { n_iter: 3, max_points_per_centroid: 64, seed: 0 }, None)
            .unwrap()
            .unwrap();
        let books = Codebooks::new(&trained.codebooks, 4, 8, 3).unwrap();
        let codes = encode(&books, &x, None).unwrap().unwrap();
        let dense: Vec<f64> = decode(&books, &codes).unwrap().into_iter().map(f64::from).collect();
        let rows = CodedRows::new(books, &codes).unwrap();
        assert_eq!((rows.n_rows(), rows.n_features()), (n, d));
        let mut buf = RowBuf::new();
        for i in [0, 17, n - 1] {
            match rows.row(i, &mut buf) {
                Row::Dense(r) => assert_eq!(r, &dense[i * d..(i + 1) * d]),
                Row::Sparse { .. } => panic!("coded rows are dense"),
            }
        }
        assert_eq!(rows.dense_block(5..40, &mut buf).unwrap(), &dense[5 * d..40 * d]);
    }
}
