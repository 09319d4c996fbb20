//! A software ConnectX (feature `mlx5-model`, the crate `uverbs-mlx5-model`): the `mlx5_ib` kernel
//! driver and the HCA, in this process, so that the mlx5 backend runs end to end on any machine.
//!
//! The model replaces only the kernel and the silicon. The mlx5 backend builds the same commands,
//! rings, work-queue entries and doorbells for it as for a ConnectX; the model decodes the commands as
//! `mlx5_ib` does, and an engine thread executes the WQEs as the hardware format says, between the
//! model's queue pairs, and writes the CQEs. The test suite runs against it in `cargo test`.
//!
//! ```no_run
//! # fn main() -> std::io::Result<()> {
//! let model = uverbs::model::Mlx5Model::new()?;
//! let devices = model.devices()?;
//! let ctx = devices.iter().next().unwrap().open()?;
//! let cq = ctx.create_cq(16, 0)?;
//! # let _ = cq;
//! # Ok(())
//! # }
//! ```

use std::io;

use crate::device::DeviceList;

pub use uverbs_mlx5_model::{ModelConfig, ObjectCounts};

/// One model device (one HCA with one RoCE port). Every clone is the same device; it lives as long as
/// any clone, device list or context of it.
#[derive(Debug, Clone)]
pub struct Mlx5Model {
    inner: uverbs_mlx5_model::Mlx5Model,
}

impl Mlx5Model {
    /// A model device with the default configuration: `mlx5_0`, GID index 1 = `::ffff:127.0.0.1`
    /// (RoCE v2), as rxe on `lo` has it.
    pub fn new() -> io::Result<Mlx5Model> {
        Ok(Mlx5Model {
            inner: uverbs_mlx5_model::Mlx5Model::new()?,
        })
    }

    /// A model device configured by `cfg`.
    pub fn with_config(cfg: ModelConfig) -> io::Result<Mlx5Model> {
        Ok(Mlx5Model {
            inner: uverbs_mlx5_model::Mlx5Model::with_config(cfg)?,
        })
    }

    /// The model's device, as a list like [`devices`](crate::devices) returns.
    pub fn devices(&self) -> io::Result<DeviceList> {
        DeviceList::from_infos(vec![self.inner.device_info()])
    }

    /// The objects alive in the model's kernel half, summed over its open files: files, contexts,
    /// PDs, MRs, CQs, QPs, SRQs and AHs, counted in each file's handle table (what `rdma resource
    /// show` counts of a kernel device, and address handles too). Every context opens a file of its
    /// own, and each device list holds one; a file's objects go when it closes.
    pub fn objects(&self) -> ObjectCounts {
        self.inner.objects()
    }

    /// [`objects`](Mlx5Model::objects) per open file, in the order the files were opened.
    pub fn objects_per_file(&self) -> Vec<ObjectCounts> {
        self.inner.objects_per_file()
    }

    /// Makes the model's kernel half refuse the next destroy command for an object of `type_id`
    /// (a `UVERBS_OBJECT_*` id of `<rdma/ib_user_ioctl_cmds.h>`, such as `UVERBS_OBJECT_MR`) with
    /// `errno`, the object staying alive: for testing what happens when the kernel refuses one.
    pub fn refuse_next_destroy(&self, type_id: u16, errno: i32) {
        self.inner.refuse_next_destroy(type_id, errno);
    }

    /// Takes the port down (`false`) or up (`true`); contexts get `PORT_ERR` / `PORT_ACTIVE`.
    pub fn set_port_active(&self, active: bool) {
        self.inner.set_port_active(active);
    }
}
