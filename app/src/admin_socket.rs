//! The admin socket of `vitals serve` on the embedded store: a Unix domain socket in the
//! data directory ([`SOCKET`], 0600 in the 0700 directory: the filesystem lets only the
//! store's owner connect), on which the server runs an operator's store command
//! ([`crate::store_commands`]) on the store it has open, so none needs it stopped.
//!
//! The protocol: one request a connection, one JSON object a line.
//! - The client sends `{"args": ["admin", "residue", "USER"], "cwd": "/home/op"}`: its
//!   command line without the program name, and the directory its relative paths are
//!   from; at most [`MAX_REQUEST`] bytes, within [`REQUEST_WITHIN`].
//! - The server answers `{"out": "..."}` for each line the command prints, as it prints
//!   it, then `{"exit": N}` or `{"exit": N, "error": "..."}`, the status (as
//!   [`Exit`] defines them) and message the command ended with, and closes.
//!
//! A request that is not such a line, is too long, or whose command line does not parse
//! or is no store command, is answered `{"exit": 2, "error": "..."}`. Each request runs
//! on its own task; one that panics is answered `{"exit": 6, ...}`, and the server goes
//! on.

use crate::admin::Place;
use crate::admin_client::{Answer, MAX_REQUEST, REQUEST_WITHIN, Request, SOCKET};
use crate::cli::Cli;
use crate::cli::exit::{self, Exit};
use crate::storage::Storage;
use crate::store_commands;
use anyhow::Context as _;
use clap::Parser as _;
use std::future::Future;
use std::os::unix::fs::{FileTypeExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::mpsc;

/// Where it is bound before it is restricted and renamed into place.
const BINDING: &str = "admin.new";

/// The admin socket of a running server, bound; its file is removed when it stops.
pub struct AdminSocket {
    listener: UnixListener,
    path: PathBuf,
}

impl AdminSocket {
    /// Binds [`SOCKET`] in `data_dir`, its owner's only from the moment it is there
    /// (bound under another name, restricted, then renamed into place). A socket already
    /// there is a stale one (bound with the store open: no other server has it), and is
    /// replaced.
    pub fn bind(data_dir: &Path) -> anyhow::Result<Self> {
        let path = data_dir.join(SOCKET);
        if let Ok(found) = std::fs::symlink_metadata(&path)
            && !found.file_type().is_socket()
        {
            anyhow::bail!("{} is there and is not a socket", path.display());
        }
        let binding = data_dir.join(BINDING);
        match std::fs::remove_file(&binding) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(e).with_context(|| format!("removing {}", binding.display()));
            }
            _ => {}
        }
        let listener = UnixListener::bind(&binding)
            .with_context(|| format!("binding {}", binding.display()))?;
        let placed = std::fs::set_permissions(&binding, std::fs::Permissions::from_mode(0o600))
            .and_then(|()| std::fs::rename(&binding, &path));
        if let Err(error) = placed {
            let _ = std::fs::remove_file(&binding);
            return Err(error).with_context(|| format!("placing {}", path.display()));
        }
        Ok(Self { listener, path })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Answers requests on `storage` until `shutdown` resolves, each on its own task;
    /// then removes the socket and waits for the requests in flight.
    pub async fn serve(self, storage: Storage, shutdown: impl Future<Output = ()>) {
        let mut requests = tokio::task::JoinSet::new();
        tokio::pin!(shutdown);
        loop {
            tokio::select! {
                () = &mut shutdown => break,
                accepted = self.listener.accept() => match accepted {
                    Ok((stream, _)) => {
                        requests.spawn(answer(stream, storage.clone()));
                    }
                    Err(error) => {
                        tracing::warn!(%error, "accepting on the admin socket failed");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                },
                Some(_) = requests.join_next(), if !requests.is_empty() => {}
            }
        }
        if let Err(error) = std::fs::remove_file(&self.path) {
            tracing::warn!(%error, socket = %self.path.display(), "removing the admin socket failed");
        }
        while requests.join_next().await.is_some() {}
    }
}

/// Reads a request on `stream`, runs it and answers.
async fn answer(stream: UnixStream, storage: Storage) {
    let (read, mut write) = stream.into_split();
    let outcome = match read_request(read).await {
        Ok(request) => run(request, storage, &mut write).await,
        Err(error) => Err(error),
    };
    let last = match outcome {
        Ok(exit) => Answer {
            exit: Some(exit.code()),
            ..Answer::default()
        },
        Err(error) => Answer {
            exit: Some(exit::status_of(&error, false).code()),
            error: Some(format!("{error:#}")),
            ..Answer::default()
        },
    };
    tracing::info!(
        exit = last.exit,
        error = last.error,
        "answered an admin request"
    );
    let _ = send(&mut write, &last).await;
    let _ = write.shutdown().await;
}

/// The request on `read`: one line, at most [`MAX_REQUEST`] bytes, within
/// [`REQUEST_WITHIN`]; anything else is [`Exit::Usage`].
async fn read_request(read: OwnedReadHalf) -> anyhow::Result<Request> {
    let mut line = Vec::new();
    let mut limited = BufReader::new(read.take(MAX_REQUEST as u64 + 1));
    match tokio::time::timeout(REQUEST_WITHIN, limited.read_until(b'\n', &mut line)).await {
        Err(_) => return Err(Exit::Usage.error(format!("no request within {REQUEST_WITHIN:?}"))),
        Ok(Err(error)) => return Err(Exit::Usage.error(format!("reading the request: {error}"))),
        Ok(Ok(_)) => {}
    }
    if line.last() == Some(&b'\n') {
        line.pop();
    }
    if line.len() > MAX_REQUEST {
        return Err(Exit::Usage.error(format!("a request longer than {MAX_REQUEST} bytes")));
    }
    serde_json::from_slice(&line).map_err(|error| {
        Exit::Usage.error(format!(
            "not a request (one line: {{\"args\": [\"info\"], \"cwd\": \"/dir\"}}): {error}"
        ))
    })
}

/// Runs `request`'s command on `storage` on a task of its own, sending what it prints
/// on `write` as it prints it; how it ended.
async fn run(
    request: Request,
    storage: Storage,
    write: &mut OwnedWriteHalf,
) -> anyhow::Result<Exit> {
    let command = parse(&request.args)?;
    let name = request.args.first().map_or("", String::as_str);
    let command = store_commands::served(command, request.cwd.as_deref())
        .with_context(|| format!("`vitals {name}`"))?;
    tracing::info!(args = ?request.args, "running an operator's command");
    let (lines, mut printed) = mpsc::unbounded_channel();
    let task = tokio::spawn(async move {
        let mut out = Lines {
            sender: lines,
            pending: Vec::new(),
        };
        store_commands::run(command, &Place::Served(storage), &mut out).await
    });
    // A client that went away stops getting lines; the command still runs to its end.
    let mut connected = true;
    while let Some(line) = printed.recv().await {
        let out = Answer {
            out: Some(line),
            ..Answer::default()
        };
        connected = connected && send(write, &out).await.is_ok();
    }
    task.await
        .unwrap_or_else(|error| Err(Exit::Failed.error(format!("the command failed: {error}"))))
}

/// A command line, as `vitals` parses its own; a malformed one is [`Exit::Usage`], with
/// clap's message.
fn parse(args: &[String]) -> anyhow::Result<crate::cli::Command> {
    let line = std::iter::once("vitals").chain(args.iter().map(String::as_str));
    match Cli::try_parse_from(line) {
        Ok(cli) => Ok(cli.command),
        Err(error) => {
            let text = error.render().to_string();
            let text = text.trim();
            Err(Exit::Usage.error(text.strip_prefix("error: ").unwrap_or(text)))
        }
    }
}

async fn send(write: &mut OwnedWriteHalf, answer: &Answer) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(answer)?;
    line.push(b'\n');
    write.write_all(&line).await
}

/// A command's output, sent a whole line at a time to its connection's task (what is
/// left of a last line without a newline, when the command ends).
struct Lines {
    sender: mpsc::UnboundedSender<String>,
    pending: Vec<u8>,
}

impl Lines {
    fn send(&mut self, bytes: Vec<u8>) {
        // A closed connection: the command goes on, unheard.
        let _ = self
            .sender
            .send(String::from_utf8_lossy(&bytes).into_owned());
    }
}

impl std::io::Write for Lines {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.pending.extend_from_slice(buf);
        while let Some(end) = self.pending.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.pending.drain(..=end).collect();
            self.send(line);
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for Lines {
    fn drop(&mut self) {
        if !self.pending.is_empty() {
            let rest = std::mem::take(&mut self.pending);
            self.send(rest);
        }
    }
}
