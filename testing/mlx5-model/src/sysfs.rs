//! The model's sysfs: a temporary directory laid out as `/sys` has it for an mlx5 device, so that
//! what reads sysfs (discovery's `node_guid`, `node_type` and `board_id`, and the GID table on
//! kernels without the GID ioctls) reads the model's values.
//!
//! Under the root: `class/infiniband/<name>/` (the device directory `DeviceInfo::sysfs_dir` names),
//! `class/infiniband_verbs/uverbs<N>/{ibdev,abi_version,dev,subsystem}` (with its
//! `dev/char/231:<192 + N>` link), and the PCI function both `device`
//! links point to (`devices/pci0000:00/0000:00:<N>.0/`, with the `modalias`, `vendor` and
//! `device` of a ConnectX-6 Dx), so that discovery run against the root finds the device too:
//! this crate's, and libibverbs' (which matches its provider, libmlx5, by the PCI ids of
//! `modalias`). The tree is removed when the device goes away.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::caps;
use super::ModelConfig;

static NEXT_TREE: AtomicU64 = AtomicU64::new(0);

/// A model device's sysfs tree.
#[derive(Debug)]
pub(super) struct Sysfs {
    root: PathBuf,
    dev: PathBuf,
}

/// A GID as sysfs prints it: eight groups of four hex digits.
pub(super) fn gid_text(gid: &[u8; 16]) -> String {
    gid.chunks(2)
        .map(|p| format!("{:02x}{:02x}", p[0], p[1]))
        .collect::<Vec<_>>()
        .join(":")
}

/// A GUID as sysfs prints it: `xxxx:xxxx:xxxx:xxxx`.
pub(super) fn guid_text(guid: u64) -> String {
    let b = guid.to_be_bytes();
    b.chunks(2)
        .map(|p| format!("{:02x}{:02x}", p[0], p[1]))
        .collect::<Vec<_>>()
        .join(":")
}

fn put(dir: &Path, rel: &str, content: &str) -> io::Result<()> {
    let p = dir.join(rel);
    if let Some(parent) = p.parent() {
        fs::create_dir_all(parent)?;
    }
    fs::write(p, format!("{content}\n"))
}

impl Sysfs {
    /// Writes the tree of a device configured by `cfg`, with uverbs index `index`.
    pub fn create(cfg: &ModelConfig, index: u32, port_active: bool) -> io::Result<Sysfs> {
        let base = std::env::temp_dir();
        let root = loop {
            let n = NEXT_TREE.fetch_add(1, Ordering::Relaxed);
            let p = base.join(format!("uverbs-mlx5-model.{}.{n}", std::process::id()));
            match fs::create_dir(&p) {
                Ok(()) => break p,
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        };
        let dev = root.join("class/infiniband").join(&cfg.name);
        let tree = Sysfs { root, dev };
        tree.fill(cfg, index, port_active)?;
        Ok(tree)
    }

    fn fill(&self, cfg: &ModelConfig, index: u32, port_active: bool) -> io::Result<()> {
        let d = &self.dev;
        put(d, "node_type", "1: CA")?;
        put(d, "node_guid", &guid_text(cfg.node_guid))?;
        put(d, "sys_image_guid", &guid_text(cfg.node_guid))?;
        put(d, "fw_ver", caps::FW_VER_TEXT)?;
        put(d, "hca_type", caps::HCA_TYPE)?;
        put(d, "hw_rev", "0x0")?;
        put(d, "board_id", caps::BOARD_ID)?;
        put(d, "node_desc", &format!("uverbs mlx5 model {}", cfg.name))?;
        put(d, "ports/1/link_layer", "Ethernet")?;
        put(d, "ports/1/rate", caps::RATE_TEXT)?;
        put(d, "ports/1/lid", "0x0")?;
        put(d, "ports/1/sm_lid", "0x0")?;
        put(d, "ports/1/lid_mask_count", "0")?;
        put(d, "ports/1/sm_sl", "0")?;
        put(
            d,
            "ports/1/cap_mask",
            &format!("{:#010x}", caps::PORT_CAP_FLAGS),
        )?;
        put(d, "ports/1/pkeys/0", "0xffff")?;
        for i in 0..caps::gid_tbl_len(cfg) as usize {
            let gid = cfg.gids.get(i).copied().unwrap_or([0; 16]);
            put(d, &format!("ports/1/gids/{i}"), &gid_text(&gid))?;
            if gid != [0; 16] {
                put(d, &format!("ports/1/gid_attrs/types/{i}"), "RoCE v2")?;
                put(d, &format!("ports/1/gid_attrs/ndevs/{i}"), &cfg.netdev)?;
            }
        }
        self.set_port(port_active)?;
        let uverbs = self.root.join("class/infiniband_verbs");
        put(&uverbs, "abi_version", "6")?;
        put(&uverbs, &format!("uverbs{index}/ibdev"), &cfg.name)?;
        put(&uverbs, &format!("uverbs{index}/abi_version"), "1")?;
        // The character device `/dev/infiniband/uverbs<N>` is (IB_UVERBS_MAJOR, IB_UVERBS_BASE_MINOR
        // + N), as the kernel numbers it.
        put(
            &uverbs,
            &format!("uverbs{index}/dev"),
            &format!("231:{}", 192 + index),
        )?;
        // The PCI function, as a ConnectX-6 Dx (15b3:101d) presents it.
        let pci_rel = format!("devices/pci0000:00/0000:00:{:02x}.0", index + 2);
        let pci = self.root.join(&pci_rel);
        put(&pci, "vendor", "0x15b3")?;
        put(&pci, "device", &format!("{:#06x}", caps::PCI_DEVICE_ID))?;
        put(&pci, "subsystem_vendor", "0x15b3")?;
        put(&pci, "subsystem_device", "0x0016")?;
        put(
            &pci,
            "modalias",
            &format!(
                "pci:v000015B3d{:08X}sv000015B3sd00000016bc02sc00i00",
                caps::PCI_DEVICE_ID
            ),
        )?;
        // Bound to the `mlx5_core` PCI driver, by which discovery without netlink knows an mlx5
        // device.
        fs::create_dir_all(self.root.join("bus/pci/drivers/mlx5_core"))?;
        std::os::unix::fs::symlink("../../../bus/pci/drivers/mlx5_core", pci.join("driver"))?;
        std::os::unix::fs::symlink(format!("../../../{pci_rel}"), self.dev.join("device"))?;
        std::os::unix::fs::symlink(
            format!("../../../{pci_rel}"),
            uverbs.join(format!("uverbs{index}/device")),
        )?;
        // The character device's entry, by which the driver knows a uverbs device from any other
        // file before it sends a command (`dev/char/231:<192 + N>/subsystem`).
        std::os::unix::fs::symlink(
            "../../infiniband_verbs",
            uverbs.join(format!("uverbs{index}/subsystem")),
        )?;
        fs::create_dir_all(self.root.join("dev/char"))?;
        std::os::unix::fs::symlink(
            format!("../../class/infiniband_verbs/uverbs{index}"),
            self.root.join(format!("dev/char/231:{}", 192 + index)),
        )?;
        Ok(())
    }

    /// Rewrites the port's state files.
    pub fn set_port(&self, active: bool) -> io::Result<()> {
        let (state, phys) = if active {
            ("4: ACTIVE", "5: LinkUp")
        } else {
            ("1: DOWN", "3: Disabled")
        };
        put(&self.dev, "ports/1/state", state)?;
        put(&self.dev, "ports/1/phys_state", phys)
    }

    /// The device directory (`/sys/class/infiniband/<name>` of the model).
    pub fn device_dir(&self) -> &Path {
        &self.dev
    }

    /// The root (`/sys` of the model).
    pub fn root(&self) -> &Path {
        &self.root
    }
}

impl Drop for Sysfs {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.root);
    }
}
