//! Resuming: what a killed campaign left behind is found again and freed.

use std::path::PathBuf;

use super::on_slurm::{collect, store_path};
use super::*;
use crate::Error;
use crate::slurm::Submission;
use crate::store::{self, Selection, Store};

/// The Slurm backend's side of a campaign: rounds as job arrays, and finding them again.
impl Campaign<'_> {
    /// Waits for the submissions a killed knobs left in the spool for this campaign and
    /// stores their runs, then frees the configurations they held: the runs stored, and
    /// notes about tasks that did not finish.
    pub(super) fn resume(
        &self,
        store: &Store,
        selections: &[Selection],
        on_event: &mut dyn FnMut(Event),
    ) -> Result<(u64, Vec<String>), Error> {
        let mut stored = 0;
        let mut notes = Vec::new();
        let Backend::Slurm(backend) = &self.backend else {
            // A local knobs killed mid-round (Ctrl-C, SIGKILL) left claims nobody measures.
            store.release_dead_owners()?;
            return Ok((stored, notes));
        };
        // A submission of several commits belongs to the selection of each.
        let mut found: Vec<(PathBuf, Submission)> = Vec::new();
        for selection in selections {
            for (dir, submission) in backend.unfinished(&store_path(store), selection)? {
                if !found.iter().any(|(d, _)| *d == dir) {
                    found.push((dir, submission));
                }
            }
        }
        found.sort_by_key(|(_, s)| s.round);
        for (dir, submission) in found {
            if store::owner_alive(&submission.owner) == Some(true) {
                // Another knobs here waits for it and stores its runs.
                continue;
            }
            on_event(Event::Note(&format!(
                "found round {} again (Slurm job {}, {}); waiting for it",
                submission.round,
                submission.job.as_deref().unwrap_or("not known yet"),
                dir.display()
            )));
            let (runs, more) = collect(store, &dir, &submission, self.regions.as_ref(), on_event)?;
            stored += runs;
            notes.extend(more);
            store.release_owner(&submission.owner)?;
        }
        // A knobs killed between claiming a round and recording its submission left claims
        // of a day's lease and nothing to find again.
        store.release_dead_owners()?;
        Ok((stored, notes))
    }
}
