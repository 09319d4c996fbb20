//! Shared helpers of the integration tests.
//!
//! The verbs suites get their device from [`any_device`]: the kernel device the VM harness
//! (`tests/vm/run`) promises in `UVERBS_TEST_DEVICE` (rxe there), or else a fresh software
//! ConnectX ([`uverbs_mlx5_model::Mlx5Model`], a dev-dependency) in this process, so the same
//! tests run on the mlx5 backend in plain `cargo test`. Tests that run tools as separate processes or
//! compare with rdma-core need a kernel device and use [`test_device`]. When the harness promised a
//! device and it is not there, the test fails; when nothing can be tested, the test says it was
//! skipped and passes without testing anything. Tools run as bounded child processes with
//! [`process`].
#![allow(dead_code)]

pub mod behaviour;
pub mod process;
pub mod verbs;

/// Whether the long variants run: `UVERBS_LONG` set to anything but empty or `0`.
pub fn long() -> bool {
    std::env::var_os("UVERBS_LONG").is_some_and(|v| v != "0" && !v.is_empty())
}

use std::process::{Command, Output};

use uverbs::{CommandPath, Context, Device, DeviceList};

/// A device to test on: the kernel's, or a model's.
pub struct TestDevice {
    name: String,
    list: DeviceList,
    model: Option<uverbs_mlx5_model::Mlx5Model>,
}

impl TestDevice {
    /// The device's name (`rxe0`, `mlx5_0`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The device.
    pub fn device(&self) -> Device<'_> {
        self.list
            .find(&self.name)
            .expect("the test device vanished")
    }

    /// Opens it on the default command path.
    pub fn open(&self) -> Context {
        self.device()
            .open()
            .unwrap_or_else(|e| panic!("opening {}: {e}", self.name))
    }

    /// Opens it on `path`.
    pub fn open_with(&self, path: CommandPath) -> Context {
        self.device()
            .open_with(path)
            .unwrap_or_else(|e| panic!("opening {} ({path:?}): {e}", self.name))
    }

    /// The device list the device was found in (the kernel's, or the model's).
    pub fn list(&self) -> &DeviceList {
        &self.list
    }

    /// The model behind a model device, `None` on a kernel device. This is the test equipment, not
    /// the backend: ask it for what only the model can tell (its HCA's counters, its object
    /// tables) or for how much a test can afford (the model is fast, the VM's rxe is emulated),
    /// never for what the device does; that is [`Context::supports`](uverbs::Context::supports),
    /// what the device reports, or [`TestDevice::behaviour`].
    pub fn model(&self) -> Option<&uverbs_mlx5_model::Mlx5Model> {
        self.model.as_ref()
    }

    /// How the device's backend does what the verbs leave to the implementation (the status of
    /// a refused request, the events it raises, where its rings live): [`behaviour`]'s table.
    pub fn behaviour(&self) -> behaviour::Behaviour {
        behaviour::of(self.device().driver())
    }
}

/// The device for a verbs test: the kernel device the harness promised, or else the mlx5 model.
/// (`Option` for the callers' sake: there is always one.)
pub fn any_device(test: &str) -> Option<TestDevice> {
    if let Some(name) = promised_device() {
        let list = uverbs::devices().unwrap();
        return Some(TestDevice {
            name,
            list,
            model: None,
        });
    }
    let model = uverbs_mlx5_model::Mlx5Model::new().expect("starting the mlx5 model");
    let list = uverbs::DeviceList::from_infos(vec![model.device_info()]).unwrap();
    let name = list.iter().next().unwrap().name_str().to_owned();
    eprintln!("{test}: on the mlx5 model ({name})");
    Some(TestDevice {
        name,
        list,
        model: Some(model),
    })
}

/// The kernel device the harness promised (checked to be there), or `None`.
fn promised_device() -> Option<String> {
    match std::env::var("UVERBS_TEST_DEVICE") {
        Ok(name) if !name.is_empty() => {
            let list = uverbs::devices().unwrap_or_else(|e| {
                panic!("UVERBS_TEST_DEVICE={name} was promised, but listing devices failed: {e}")
            });
            assert!(
                list.find(&name).is_some(),
                "UVERBS_TEST_DEVICE={name} was promised, but the devices are {:?}",
                list.iter()
                    .map(|d| d.name_str().to_owned())
                    .collect::<Vec<_>>()
            );
            Some(name)
        }
        _ => None,
    }
}

/// The kernel device the harness promised (for tests that run tools as processes or compare with
/// rdma-core), or `None` (after saying so) when there is none.
pub fn test_device(test: &str) -> Option<String> {
    let name = promised_device();
    if name.is_none() {
        eprintln!("SKIPPED {test}: no kernel RDMA device (UVERBS_TEST_DEVICE is unset; run under tests/vm/run)");
    }
    name
}

/// Runs a command, failing the test if it cannot be started.
pub fn run(cmd: &str, args: &[&str]) -> Output {
    Command::new(cmd)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd}: {e}"))
}

/// Runs the `uverbs` CLI built for this test (the tools crate's tests, `tools/tests/`, which
/// include this module; the library's own tests have no binary to run).
pub fn uverbs(args: &[&str]) -> Output {
    match option_env!("CARGO_BIN_EXE_uverbs") {
        Some(bin) => run(bin, args),
        None => panic!("the uverbs binary: only the tools crate's tests run it"),
    }
}

/// Stdout as text.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Stderr as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Asserts that two tool outputs are identical, showing every differing line when they are not.
pub fn assert_same_output(what: &str, expected: &str, actual: &str) {
    if expected == actual {
        return;
    }
    let e: Vec<&str> = expected.lines().collect();
    let a: Vec<&str> = actual.lines().collect();
    let mut report = String::new();
    for i in 0..e.len().max(a.len()) {
        let (x, y) = (e.get(i).copied(), a.get(i).copied());
        if x != y {
            report.push_str(&format!(
                "line {}:\n  rdma-core: {x:?}\n  uverbs:    {y:?}\n",
                i + 1
            ));
        }
    }
    if report.is_empty() {
        report = "(only line endings differ)".into();
    }
    panic!(
        "{what}: outputs differ\n{report}\n--- rdma-core ---\n{expected}\n--- uverbs ---\n{actual}"
    );
}

/// Whether this runs in the VM harness (`UVERBS_VM` set). Parts of a test that change the machine
/// itself (take an interface down, delete the device, add veth pairs and netem) run only there;
/// elsewhere (a ConnectX on the host, say) this says that `part` of `test` was skipped, and why.
pub fn in_vm(test: &str, part: &str) -> bool {
    let vm = std::env::var_os("UVERBS_VM").is_some_and(|v| !v.is_empty());
    if !vm {
        eprintln!(
            "SKIPPED {test}: {part} changes the machine, so it runs only in the VM harness \
             (UVERBS_VM is unset)"
        );
    }
    vm
}

/// Whether `tool` (rdma-core's or perftest's, the oracle a test compares with) is on `PATH`. The
/// VM harness installs them, so there its absence fails the test; elsewhere this says that the
/// comparison in `test` was skipped.
pub fn oracle(test: &str, tool: &str) -> bool {
    let found = std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file()));
    if !found {
        assert!(
            std::env::var_os("UVERBS_VM").is_none(),
            "{test}: {tool} is not installed, but the VM harness installs it"
        );
        eprintln!("SKIPPED {test}: {tool} is not installed, so there is nothing to compare with");
    }
    found
}
