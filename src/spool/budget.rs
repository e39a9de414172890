//! The `--max-spool` budget: reserving room for output, evicting finished commands
//! least recently read first, and the sentence said when running commands alone fill it.

use super::*;

impl Spool {
    /// Why output is refused for room: running commands alone fill the spool.
    pub(crate) fn full_reason(&self) -> String {
        format!(
            "the spool reached --max-spool ({}) with running commands alone",
            crate::units::format_size(self.config.max_spool)
        )
    }

    /// Takes `more` bytes of the budget for `store`, evicting finished commands (least
    /// recently read first) when the spool would pass `--max-spool`, and returns how
    /// many it took. When the room left once every finished command is evicted is less
    /// than `more` but at least `least`, it takes that room, all of it, and no more
    /// (the caller stores the part of its bytes that fits); less than `least` is
    /// refused.
    ///
    /// A store refused for room (its output has a gap open, and every chunk asks
    /// again) is refused at once, without the registry's lock or a look at every
    /// store, while it asks for no less than it was refused and no room has been
    /// freed since ([`Shared::freed`]): the answer could only be the same.
    pub(super) fn reserve(&self, store: &Store, more: u64, least: u64) -> Result<u64, SpoolError> {
        if more == 0 {
            return Ok(0);
        }
        let least = least.clamp(1, more);
        let refused = *store.refused.lock();
        if let Some((asked, freed)) = refused {
            if least >= asked && self.shared.freed.load(Ordering::SeqCst) == freed {
                return Err(SpoolError::Full(self.full_reason()));
            }
        }
        let mut victims = Vec::new();
        // The stores looked at are dropped only once the lock is released: one may be
        // let go meanwhile, and the last reference's drop takes the lock.
        let mut looked_at: Vec<Arc<Store>> = Vec::new();
        let result = {
            let mut registry = self.shared.registry.lock();
            #[cfg(test)]
            {
                registry.tries += 1;
            }
            let take = |registry: &mut Registry, bytes: u64| -> Result<u64, SpoolError> {
                registry.used += bytes;
                store.bytes.fetch_add(bytes, Ordering::SeqCst);
                if refused.is_some() {
                    *store.refused.lock() = None;
                }
                Ok(bytes)
            };
            let result = loop {
                if registry.used + more <= self.config.max_spool {
                    break take(&mut registry, more);
                }
                if looked_at.is_empty() {
                    looked_at = registry.stores.values().filter_map(Weak::upgrade).collect();
                }
                let victim = looked_at
                    .iter()
                    .filter(|s| {
                        s.id != store.id && s.finished.load(Ordering::SeqCst) && !s.is_gone()
                    })
                    .filter(|s| s.bytes.load(Ordering::SeqCst) > 0)
                    .min_by_key(|s| {
                        let open = s.readers.load(Ordering::SeqCst) > 0;
                        (open, s.last_read.load(Ordering::Relaxed))
                    })
                    .cloned();
                let Some(victim) = victim else {
                    let room = self.config.max_spool.saturating_sub(registry.used);
                    if room >= least {
                        break take(&mut registry, room);
                    }
                    // Read under the lock, where every bump is made: room freed from
                    // now on lets the next try through.
                    let freed = self.shared.freed.load(Ordering::SeqCst);
                    *store.refused.lock() = Some((least, freed));
                    break Err(SpoolError::Full(self.full_reason()));
                };
                victim.evicted.store(true, Ordering::SeqCst);
                let bytes = victim.bytes.load(Ordering::SeqCst);
                registry.used = registry.used.saturating_sub(bytes);
                registry.evicted += 1;
                self.shared.room_freed();
                victims.push(victim);
            };
            if !victims.is_empty() {
                // Queued under the lock (a send never waits): evictions made at once on
                // several threads queue their counts in the order they were counted,
                // so the file is left with the latest.
                self.shared.send(Task::Keep(
                    EVICTED_FILE,
                    format!("{}\n", registry.evicted).into_bytes(),
                ));
            }
            result
        };
        for victim in victims {
            // A reader with a file open keeps its bytes: its last close deletes them.
            let read = victim.readers.load(Ordering::SeqCst) > 0;
            (self.shared.log)(&format!(
                "evicted {} ({}) to stay under --max-spool {}{}",
                victim.dir.display(),
                crate::units::format_size(victim.bytes.load(Ordering::SeqCst)),
                crate::units::format_size(self.config.max_spool),
                if read {
                    "; its files go when the last one open is closed"
                } else {
                    ""
                }
            ));
            if !read {
                self.shared.send(Task::Delete(victim.dir.clone()));
            }
        }
        result
    }
}
