//! What the host tells a guest: one JSON file (`plan.json`) in the guest's state directory, which
//! the host shares read-write with that guest, and the files the guest writes back beside it.

use serde::{Deserialize, Serialize};

/// The guest's plan, written by the host before each boot.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Plan {
    /// Where the command runs (the host's current directory, seen through the shared root).
    pub cwd: String,
    /// The command and its arguments.
    pub command: Vec<String>,
    /// The host's environment, forwarded to the command.
    pub env: Vec<(String, String)>,
    /// Bound on the command, in seconds (enforced in the guest; the host waits a little longer).
    pub timeout_s: u64,
    /// The soft-RoCE devices to create.
    pub devices: Devices,
    /// This guest's number (1-based) and how many there are.
    pub host: u32,
    /// How many guests this run boots.
    pub hosts: u32,
    /// Which boot of this guest this is (1-based; `uverbs vm reboot` asks for the next).
    pub boot: u32,
    /// The emulated Ethernet link to the other guest (two hosts only).
    pub link: Option<Link>,
    /// No progress lines from the guest side.
    pub quiet: bool,
}

/// The soft-RoCE devices a guest gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Devices {
    /// None: the command sets up what it wants.
    None,
    /// `rxe0` on `lo` (the default on one host).
    Loopback,
    /// `rxe0`..`rxe{N-1}` on the ends of veth pairs, each end with its own addresses.
    Veth(u32),
    /// `rxe0` on the link to the other guest.
    Link,
}

/// One guest's end of the link between two guests.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Link {
    /// The MAC address of this guest's virtio-net interface (how the guest finds it).
    pub mac: String,
    /// This guest's IPv4 address (a /24).
    pub addr: String,
    /// The other guest's IPv4 address.
    pub peer: String,
    /// This guest's IPv6 address (a /64).
    pub addr6: String,
    /// The other guest's IPv6 address.
    pub peer6: String,
    /// `tc qdisc add dev IF root netem ARGS`, if any.
    pub netem: Option<String>,
}

/// The files in a guest's state directory.
pub mod files {
    /// The plan (host → guest).
    pub const PLAN: &str = "plan.json";
    /// Created as soon as the guest's init runs (guest → host).
    pub const BOOTED: &str = "booted";
    /// Created right before the command starts (guest → host): its timeout runs from here.
    pub const STARTED: &str = "started";
    /// The command's exit status, as text (guest → host).
    pub const RC: &str = "rc";
    /// Created when the guest killed the command at its timeout.
    pub const TIMED_OUT: &str = "timedout";
    /// A one-line reason the guest's setup failed.
    pub const ERROR: &str = "error";
    /// The guest kernel's console, warnings and worse (qemu writes it).
    pub const CONSOLE: &str = "console";
    /// Created by `uverbs vm reboot`: boot this guest again.
    pub const REBOOT: &str = "reboot";
}

/// Exit status for a failure of the tool or of the guest's setup (as `timeout(1)` uses 125).
pub const EXIT_SETUP: i32 = 125;
/// Exit status when the boot or the command ran out of time (as `timeout(1)`).
pub const EXIT_TIMEOUT: i32 = 124;
/// Exit status when the command was not found (as the shell's).
pub const EXIT_NOT_FOUND: i32 = 127;
/// Exit status when the command could not be executed (as the shell's).
pub const EXIT_CANNOT_EXEC: i32 = 126;
