//! The error every command ends with: one line saying what failed, and the kind of failure.
//!
//! Each [`Kind`] is one documented exit code; the binary maps kinds to codes in one place
//! (`src/cli/exit.rs`). Library errors of each stage convert into it here, so that a failure's
//! kind is decided by its type, never by its message.

use crate::engine::QueryError;
use crate::ingest::IngestError;
use crate::source::SourceError;
use std::fmt;

/// What kind of failure ended a command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A bug or an unexpected condition in profq itself.
    Internal,
    /// Bad arguments: a flag, run id, label, parameter, unknown run, query or question.
    Usage,
    /// The input is missing, unreadable, corrupt, truncated or not a profile.
    Input,
    /// The store could not be read or written, or a query failed or was refused.
    Store,
    /// `--strict-provenance` and the provenance checks failed.
    Provenance,
}

#[derive(Debug)]
pub struct Error {
    pub kind: Kind,
    /// One line; empty when the output says everything.
    pub message: String,
    /// What the command has to print on stdout all the same (an unrecognised question's
    /// answer, which lists the questions profq understands).
    pub output: String,
}

impl Error {
    pub fn new(kind: Kind, message: impl fmt::Display) -> Self {
        Error { kind, message: message.to_string(), output: String::new() }
    }
    pub fn usage(message: impl fmt::Display) -> Self {
        Error::new(Kind::Usage, message)
    }
    pub fn input(message: impl fmt::Display) -> Self {
        Error::new(Kind::Input, message)
    }
    pub fn store(message: impl fmt::Display) -> Self {
        Error::new(Kind::Store, message)
    }
    /// A failure explained by its `output` alone (an unrecognised question's answer).
    pub fn quiet(kind: Kind, output: String) -> Self {
        Error { kind, message: String::new(), output }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

impl From<IngestError> for Error {
    fn from(e: IngestError) -> Self {
        let kind = match e {
            IngestError::Input(_) => Kind::Input,
            IngestError::Usage(_) => Kind::Usage,
            IngestError::Store(_) => Kind::Store,
        };
        Error::new(kind, e)
    }
}

/// Opening a run to analyse: a bad INPUT is the input's fault, an unknown run id the
/// caller's; a run id or label refused while loading an INPUT, like every store or query
/// failure, is the store's.
impl From<SourceError> for Error {
    fn from(e: SourceError) -> Self {
        let kind = match &e {
            SourceError::Ingest(IngestError::Input(_)) => Kind::Input,
            SourceError::Ingest(IngestError::Usage(_) | IngestError::Store(_)) | SourceError::Query(_) => Kind::Store,
            SourceError::NoRun(_) | SourceError::Usage(_) => Kind::Usage,
        };
        Error::new(kind, e)
    }
}

impl From<QueryError> for Error {
    fn from(e: QueryError) -> Self {
        Error::store(e)
    }
}
