//! Attaching breakers to the fleet: the [`Door`] the fleet, the registry
//! watch and the families' scan attach and detach breakers through, the
//! [`Notifier`] each attached breaker hands its transitions to, and why a
//! breaker could not join. Below both the fleet (which owns the door and
//! reads what comes through it) and its breakers (which go through it).

use crate::keys::valid_breaker_name;
use crate::lane::{Inbox, Lane};
use crate::member::{FleetMember, LocalTransition};
use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;

/// Why a breaker could not join.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttachError {
    /// Another breaker of this process already joined under this name.
    DuplicateName(String),
    /// The name is empty, longer than 160 bytes or has control characters.
    InvalidName(String),
    /// The background task has stopped.
    Unavailable,
}

impl fmt::Display for AttachError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AttachError::DuplicateName(n) => {
                write!(f, "a breaker named `{n}` already joined the fleet")
            }
            AttachError::InvalidName(n) => write!(f, "`{n}` cannot be a fleet breaker name"),
            AttachError::Unavailable => f.write_str("the fleet task is not accepting breakers"),
        }
    }
}

impl std::error::Error for AttachError {}

/// Joining and leaving: rare, never lost (unbounded).
pub(crate) enum Control {
    Attach(usize, Arc<dyn FleetMember>, Arc<Lane>),
    Detach(usize),
}

/// The handle a breaker's transition hook calls. Cheap to clone, never blocks.
#[derive(Clone)]
pub struct Notifier {
    id: usize,
    lane: Arc<Lane>,
}

impl fmt::Debug for Notifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Notifier")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl Notifier {
    /// Tells the fleet of a local transition: a `fetch_add` and two stores, no
    /// lock, no wait, whatever the fleet's task is doing. The task reads it
    /// within 5 ms; when it has fallen more than 32 transitions of this breaker
    /// behind, the oldest are dropped (counted in
    /// [`FleetStats::transitions_dropped`](crate::FleetStats::transitions_dropped)) and the task catches up from the
    /// breaker's state.
    pub fn notify(&self, transition: LocalTransition) {
        self.lane.push(transition);
    }

    pub(crate) fn lane(&self) -> &Arc<Lane> {
        &self.lane
    }
}

/// What attaching a breaker needs: shared with the registry watch, which
/// attaches breakers as they register.
pub(crate) struct Door {
    inbox: Arc<Inbox>,
    control: mpsc::UnboundedSender<Control>,
    next_id: AtomicUsize,
    names: Mutex<HashMap<String, usize>>,
}

impl Door {
    /// A door into the task reading `inbox` (transitions, through each
    /// attached breaker's lane) and `control` (attaching and detaching).
    pub(crate) fn new(inbox: Arc<Inbox>, control: mpsc::UnboundedSender<Control>) -> Self {
        Door {
            inbox,
            control,
            next_id: AtomicUsize::new(0),
            names: Mutex::new(HashMap::new()),
        }
    }

    /// Names of the breakers attached, in no particular order.
    pub(crate) fn attached(&self) -> Vec<String> {
        let names = self.names.lock().unwrap_or_else(|p| p.into_inner());
        names.keys().cloned().collect()
    }

    pub(crate) fn detach(&self, name: &str) -> bool {
        let mut names = self.names.lock().unwrap_or_else(|p| p.into_inner());
        match names.remove(name) {
            Some(id) => {
                let _ = self.control.send(Control::Detach(id));
                true
            }
            None => false,
        }
    }

    pub(crate) fn attach(&self, member: Arc<dyn FleetMember>) -> Result<Notifier, AttachError> {
        let name = member.name().to_owned();
        if !valid_breaker_name(&name) {
            return Err(AttachError::InvalidName(name));
        }
        let mut names = self.names.lock().unwrap_or_else(|p| p.into_inner());
        if names.contains_key(&name) {
            return Err(AttachError::DuplicateName(name));
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let lane = Arc::new(Lane::new(self.inbox.clone()));
        self.control
            .send(Control::Attach(id, member.clone(), lane.clone()))
            .map_err(|_| AttachError::Unavailable)?;
        names.insert(name, id);
        drop(names);
        let notifier = Notifier { id, lane };
        member.attached(notifier.clone());
        Ok(notifier)
    }
}
