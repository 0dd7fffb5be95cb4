//! The client side of `vitals serve`'s admin socket, and the protocol both sides speak
//! (see [`crate::admin_socket`] for the server): a store command that finds its store
//! held by another process sends its command line here and prints what the server
//! answers, ending as the command did. Kept apart from the server so the store commands
//! (which may forward) and the server (which runs them) do not depend on each other.

use crate::cli::exit::Exit;
use anyhow::Context as _;
use serde::{Deserialize, Serialize};
use std::ffi::OsString;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::net::UnixStream;

/// The socket's name in the data directory.
pub const SOCKET: &str = "admin.sock";
/// The longest request line, in bytes.
pub const MAX_REQUEST: usize = 64 * 1024;
/// How long a client may take to send its request.
pub const REQUEST_WITHIN: Duration = Duration::from_secs(10);

/// What a client asks.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Request {
    pub(crate) args: Vec<String>,
    #[serde(default)]
    pub(crate) cwd: Option<PathBuf>,
}

/// A line of the server's answer: output, or the end.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(crate) struct Answer {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) out: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) exit: Option<u8>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) error: Option<String>,
}

/// Runs a command through the server on the admin socket beside `store`, which another
/// process holds: `args` is this process's command line without the program name. With
/// no socket there, or none answering (a stale one), [`Exit::Store`], saying that a
/// process holds the store and naming it.
pub async fn through_server(
    store: &Path,
    args: impl Iterator<Item = OsString>,
) -> anyhow::Result<Exit> {
    let data_dir = store.parent().unwrap_or(Path::new("."));
    let socket = data_dir.join(SOCKET);
    if std::fs::symlink_metadata(&socket).is_err() {
        return Err(Exit::Store.error(format!(
            "a process holds the store {}: it is open in another process, and no `vitals \
             serve` answers beside it (no {}): wait for that process (another command?) to \
             end, or stop it",
            store.display(),
            socket.display()
        )));
    }
    let stream = UnixStream::connect(&socket).await.map_err(|error| {
        Exit::Store.error(format!(
            "a process holds the store {}, and its admin socket {} answers no server \
             ({error}: left by a server that stopped?): wait for that process to end, or \
             stop it",
            store.display(),
            socket.display()
        ))
    })?;
    let args = args
        .map(|arg| {
            arg.into_string().map_err(|arg| {
                Exit::Usage.error(format!(
                    "{arg:?} is not UTF-8: it cannot be sent to the server"
                ))
            })
        })
        .collect::<anyhow::Result<Vec<String>>>()?;
    tracing::info!(socket = %socket.display(), "the store is open in `vitals serve`: the command runs there");
    let request = Request {
        args,
        cwd: std::env::current_dir().ok(),
    };
    forward(stream, &request).await
}

/// Sends `request` on `stream`; prints the output the server answers, and ends as the
/// command it ran did.
async fn forward(stream: UnixStream, request: &Request) -> anyhow::Result<Exit> {
    let (read, mut write) = stream.into_split();
    let mut line = serde_json::to_vec(request)?;
    line.push(b'\n');
    write
        .write_all(&line)
        .await
        .context("sending the command to the server")?;
    let mut lines = BufReader::new(read).lines();
    let mut stdout = std::io::stdout();
    while let Some(line) = lines
        .next_line()
        .await
        .context("reading the server's answer")?
    {
        let answer: Answer = serde_json::from_str(&line)
            .map_err(|e| Exit::Failed.error(format!("the server answered {line:?}: {e}")))?;
        if let Some(out) = answer.out {
            stdout.write_all(out.as_bytes())?;
            stdout.flush()?;
        }
        if let Some(code) = answer.exit {
            let exit = Exit::of_code(code).unwrap_or(Exit::Failed);
            return match answer.error {
                Some(message) => Err(exit.error(message)),
                None => Ok(exit),
            };
        }
    }
    Err(Exit::Failed
        .error("the server closed the connection before the command ended (did it stop?)"))
}
