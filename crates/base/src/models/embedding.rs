//! The [`Embedding`] newtype: a finite, L2-normalised vector of a known dimension.

use super::ModelError;

#[derive(Debug, Clone, PartialEq)]
pub struct Embedding(Vec<f32>);

impl Embedding {
    /// Checks the dimension and normalises, so cosine similarity is a dot product.
    pub fn new(mut values: Vec<f32>, expected_dims: usize) -> Result<Self, ModelError> {
        if values.len() != expected_dims {
            return Err(ModelError::Dimension { expected: expected_dims, got: values.len() });
        }
        if values.iter().any(|v| !v.is_finite()) {
            return Err(ModelError::Malformed("an embedding holds a non-finite value".into()));
        }
        let norm = values.iter().map(|v| v * v).sum::<f32>().sqrt();
        if norm > 0.0 {
            values.iter_mut().for_each(|v| *v /= norm);
        }
        Ok(Self(values))
    }

    pub fn dims(&self) -> usize {
        self.0.len()
    }

    pub fn as_slice(&self) -> &[f32] {
        &self.0
    }

    pub fn cosine(&self, other: &Embedding) -> f32 {
        self.0.iter().zip(&other.0).map(|(a, b)| a * b).sum()
    }

    pub fn to_pgvector(&self) -> pgvector::Vector {
        pgvector::Vector::from(self.0.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embeddings_are_normalised_and_dimension_checked() {
        let e = Embedding::new(vec![3.0, 4.0], 2).unwrap();
        assert_eq!(e.as_slice(), &[0.6, 0.8]);
        assert!((e.cosine(&e) - 1.0).abs() < 1e-6);
        assert!(matches!(Embedding::new(vec![1.0], 2), Err(ModelError::Dimension { expected: 2, got: 1 })));
        assert!(Embedding::new(vec![f32::NAN, 1.0], 2).is_err());
    }
}
