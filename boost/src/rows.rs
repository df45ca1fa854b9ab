//! Training and evaluation rows wherever they lie: host features ([`FeatureMatrix`]) or rows
//! already in a GPU's memory ([`DeviceData`]), with their [`MetaInfo`]. The training loop reads
//! device rows in place when it runs on their GPU, and reads them back once, on the first step that
//! needs them on the host (training with `device=cpu`, a host-side metric's evaluation set).

use std::sync::{Arc, OnceLock};

use primitives::Gpu;

use crate::data::{Dataset, FeatureMatrix, MetaInfo};
use crate::external::ExternalMatrix;
use crate::gpu::DeviceData;
use crate::{Error, Result};

/// Where a set's features are.
#[derive(Clone, Copy)]
pub(crate) enum Features<'a> {
    Host(&'a FeatureMatrix),
    Device {
        gpu: &'a Gpu,
        data: DeviceData<'a>,
    },
    /// Quantised pages, without the raw values.
    Pages(&'a Arc<ExternalMatrix>),
}

/// The error of a step (`what`) that needs the raw features of external-memory pages.
pub(crate) fn no_raw_features(what: &str) -> Error {
    Error::InvalidData(format!(
        "{what} needs raw features, and external-memory rows are quantised pages: pass the rows in memory for it"
    ))
}

/// A set of rows for the training loop.
pub(crate) struct Rows<'a> {
    pub features: Features<'a>,
    pub info: &'a MetaInfo,
    /// Device rows' host copy, made by the first [`Rows::host_features`].
    host: OnceLock<FeatureMatrix>,
}

impl<'a> Rows<'a> {
    pub fn new(features: Features<'a>, info: &'a MetaInfo) -> Self {
        Rows { features, info, host: OnceLock::new() }
    }

    pub fn of(data: &'a Dataset) -> Self {
        Self::new(Features::Host(&data.features), &data.info)
    }

    pub fn rows(&self) -> usize {
        match &self.features {
            Features::Host(m) => m.rows(),
            Features::Device { data, .. } => data.rows(),
            Features::Pages(matrix) => matrix.rows(),
        }
    }

    pub fn cols(&self) -> usize {
        match &self.features {
            Features::Host(m) => m.cols(),
            Features::Device { data, .. } => data.cols(),
            Features::Pages(matrix) => matrix.cols(),
        }
    }

    /// The features on the host: device rows are read back the first time.
    pub fn host_features(&self) -> Result<&FeatureMatrix> {
        match &self.features {
            Features::Host(m) => Ok(m),
            Features::Device { gpu, data } => {
                if let Some(m) = self.host.get() {
                    return Ok(m);
                }
                let copy = data.to_host(gpu)?;
                Ok(self.host.get_or_init(|| copy))
            }
            Features::Pages(_) => Err(no_raw_features("this step")),
        }
    }

    /// Refuses infinite values (and device rows of another GPU, or of a shape their buffer does not
    /// hold), naming the row and feature.
    pub fn check_finite(&self) -> Result<()> {
        match self.features {
            Features::Host(m) => m.check_finite(),
            Features::Device { gpu, data } => data.check(gpu),
            // Checked batch by batch as they were quantised.
            Features::Pages(_) => Ok(()),
        }
    }

    /// Whether `other` is this set (the training set named as an evaluation set too).
    pub fn is(&self, other: &Rows<'_>) -> bool {
        std::ptr::eq(self.info, other.info)
    }
}
