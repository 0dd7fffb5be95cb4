//! The exit statuses of `vitals`, defined once: what each means is what a script may
//! rely on (`vitals --help` lists them). An error is given its status where it arises
//! ([`ExitOn::or_exit`], [`Exit::error`]); `main` turns the outcome into the process's
//! status, and nothing else ends the process.

use std::fmt;

/// How a `vitals` command ended. Never 101 (a panic): every failure is one of these.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// 0: done (for `admin residue`: nothing is left of the user).
    Ok,
    /// 1: done, and it found what a script must act on: residue of a user, a migrated
    /// copy that does not match its source.
    Finding,
    /// 2: usage or bad input: a malformed command line (clap's own errors are 2 too), or
    /// an id, name, date or input file that names nothing (a user id this store has
    /// never held, an unknown subscription, a JSON file or backup that is not there), or
    /// a restore over a store holding data without `--force`.
    Usage,
    /// 3: the store: missing (a mistyped `--data-dir`), empty, unreadable, of a newer
    /// format, open in another process that runs no server to take the command, or
    /// failing while the command ran; a backup to restore that is none of ours,
    /// damaged, or of a newer format.
    Store,
    /// 4: configuration: a setting or secret missing or unusable (a short secret, a JWKS
    /// file that is not there, an address that does not resolve or is in use, the
    /// embedded backend where a shared one is needed, a Lambda command outside Lambda).
    Config,
    /// 5: an external service failed or refused: AWS (DynamoDB, SQS, Kinesis, Secrets
    /// Manager, the Lambda runtime API); any unexpected failure of a command on AWS.
    External,
    /// 6: anything else: an unexpected failure (writing an output, a bug); the message
    /// says what.
    Failed,
}

impl Exit {
    pub const ALL: [Exit; 7] = [
        Exit::Ok,
        Exit::Finding,
        Exit::Usage,
        Exit::Store,
        Exit::Config,
        Exit::External,
        Exit::Failed,
    ];

    /// The process's exit status.
    pub fn code(self) -> u8 {
        match self {
            Exit::Ok => 0,
            Exit::Finding => 1,
            Exit::Usage => 2,
            Exit::Store => 3,
            Exit::Config => 4,
            Exit::External => 5,
            Exit::Failed => 6,
        }
    }

    /// One line of `vitals --help`.
    fn meaning(self) -> &'static str {
        match self {
            Exit::Ok => "done (admin residue: nothing is left of the user)",
            Exit::Finding => "found something to act on (residue of a user, a migration mismatch)",
            Exit::Usage => "usage or bad input (a malformed flag, an unknown id, name or date)",
            Exit::Store => "the store is missing, empty, of a newer format, in use or failing",
            Exit::Config => "configuration: a missing or unusable setting, secret or address",
            Exit::External => "an external service (AWS) failed",
            Exit::Failed => "any other failure (see the message)",
        }
    }

    /// The status of a process that ended with `code`, if it is one of these.
    pub fn of_code(code: u8) -> Option<Exit> {
        Self::ALL.into_iter().find(|exit| exit.code() == code)
    }

    /// An error of this status, saying `message`.
    pub fn error(self, message: impl fmt::Display) -> anyhow::Error {
        anyhow::Error::new(Classified {
            exit: self,
            error: anyhow::anyhow!("{message}"),
        })
    }

    /// `error` as an error of this status, found again by [`cause`].
    pub fn error_of(self, error: impl std::error::Error + Send + Sync + 'static) -> anyhow::Error {
        anyhow::Error::new(Classified {
            exit: self,
            error: anyhow::Error::new(error),
        })
    }

    /// The exit statuses, as `vitals --help` lists them.
    pub fn help() -> String {
        let mut text = String::from("Exit status:\n");
        for exit in Self::ALL {
            text.push_str(&format!("  {}  {}\n", exit.code(), exit.meaning()));
        }
        text
    }
}

impl From<Exit> for std::process::ExitCode {
    fn from(exit: Exit) -> Self {
        std::process::ExitCode::from(exit.code())
    }
}

/// An error that says which status it means. Its message is the error's whole chain,
/// so wrapping it loses nothing.
#[derive(Debug)]
struct Classified {
    exit: Exit,
    error: anyhow::Error,
}

impl fmt::Display for Classified {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#}", self.error)
    }
}

impl std::error::Error for Classified {}

/// Gives an error its exit status.
pub trait ExitOn<T> {
    /// The error as `exit`, unless it has a status already (the cause knows best).
    fn or_exit(self, exit: Exit) -> anyhow::Result<T>;
}

impl<T, E: Into<anyhow::Error>> ExitOn<T> for Result<T, E> {
    fn or_exit(self, exit: Exit) -> anyhow::Result<T> {
        self.map_err(|error| {
            let error = error.into();
            if given(&error).is_some() {
                return error;
            }
            anyhow::Error::new(Classified { exit, error })
        })
    }
}

/// The status given to `error` where it arose, if any (the outermost).
fn given(error: &anyhow::Error) -> Option<Exit> {
    error
        .chain()
        .find_map(|cause| cause.downcast_ref::<Classified>())
        .map(|classified| classified.exit)
}

/// The first cause of `error` of type `E`, also among the causes of errors given a
/// status ([`Exit::error_of`]).
pub fn cause<E: std::error::Error + Send + Sync + 'static>(error: &anyhow::Error) -> Option<&E> {
    error.chain().find_map(|cause| {
        cause.downcast_ref::<E>().or_else(|| {
            let classified = cause.downcast_ref::<Classified>()?;
            self::cause::<E>(&classified.error)
        })
    })
}

/// The status `error` ends the process with: the one it was given where it arose; else
/// what its causes say (a store that will not open, an address in use); else, for a
/// command working on AWS (`on_aws`), [`Exit::External`], and [`Exit::Failed`] for any
/// other.
pub fn status_of(error: &anyhow::Error, on_aws: bool) -> Exit {
    if let Some(exit) = given(error) {
        return exit;
    }
    for cause in error.chain() {
        if cause.downcast_ref::<infra::embedded::OpenError>().is_some() {
            return Exit::Store;
        }
        if let Some(io) = cause.downcast_ref::<std::io::Error>() {
            use std::io::ErrorKind::{AddrInUse, AddrNotAvailable};
            if matches!(io.kind(), AddrInUse | AddrNotAvailable) {
                return Exit::Config;
            }
        }
    }
    let store_failed = error.chain().any(|cause| {
        cause.downcast_ref::<infra::StoreError>().is_some()
            || matches!(
                cause.downcast_ref::<commands::CommandError>(),
                Some(commands::CommandError::Store(_))
            )
    });
    match (on_aws, store_failed) {
        (true, _) => Exit::External,
        (false, true) => Exit::Store,
        (false, false) => Exit::Failed,
    }
}

/// A command's error with its status: a refused input (invalid, or naming nothing) is
/// [`Exit::Usage`]; any other is told by its cause ([`status_of`]).
pub fn of_command(error: commands::CommandError) -> anyhow::Error {
    use commands::CommandError;
    match error {
        CommandError::Validation { .. } | CommandError::NotFound(_) => {
            anyhow::Error::new(Classified {
                exit: Exit::Usage,
                error: anyhow::Error::new(error),
            })
        }
        other => anyhow::Error::new(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_codes_are_distinct_and_the_help_lists_each() {
        let codes: std::collections::BTreeSet<u8> = Exit::ALL.iter().map(|e| e.code()).collect();
        assert_eq!(codes.len(), Exit::ALL.len());
        let help = Exit::help();
        for exit in Exit::ALL {
            assert!(
                help.contains(&format!("  {}  {}", exit.code(), exit.meaning())),
                "{help}"
            );
        }
    }

    #[test]
    fn a_status_given_where_an_error_arose_is_kept() {
        let error = Exit::Usage.error("not a user id");
        let wrapped = Err::<(), _>(error.context("residue"))
            .or_exit(Exit::Store)
            .expect_err("an error");
        assert_eq!(status_of(&wrapped, true), Exit::Usage);
        assert_eq!(format!("{wrapped:#}"), "residue: not a user id");
        let plain = Err::<(), _>(anyhow::anyhow!("disk full"))
            .or_exit(Exit::Store)
            .expect_err("an error");
        assert_eq!(status_of(&plain, false), Exit::Store);
        assert_eq!(format!("{plain:#}"), "disk full");
        let typed = Exit::Store
            .error_of(std::io::Error::other("held"))
            .context("opening");
        assert_eq!(status_of(&typed, false), Exit::Store);
        assert_eq!(
            cause::<std::io::Error>(&typed).map(|e| e.to_string()),
            Some("held".into())
        );
        for exit in Exit::ALL {
            assert_eq!(Exit::of_code(exit.code()), Some(exit));
        }
        assert_eq!(Exit::of_code(101), None);
    }

    #[test]
    fn unclassified_errors_are_told_by_their_causes() {
        let open = infra::embedded::OpenError::NewerFormat {
            path: "/data/vitals.fjall".into(),
            found: 9,
        };
        assert_eq!(status_of(&anyhow::Error::new(open), true), Exit::Store);
        let in_use = std::io::Error::from(std::io::ErrorKind::AddrInUse);
        let in_use = anyhow::Error::new(in_use).context("binding 127.0.0.1:9464");
        assert_eq!(status_of(&in_use, true), Exit::Config);
        let store = anyhow::Error::new(infra::StoreError::Throttled);
        assert_eq!(status_of(&store, false), Exit::Store);
        assert_eq!(status_of(&store, true), Exit::External);
        assert_eq!(status_of(&anyhow::anyhow!("odd"), false), Exit::Failed);
    }
}
