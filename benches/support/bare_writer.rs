//! The bare group-commit writer the benches compare `engaged`'s writer with: one thread
//! takes every queued write, inserts each as one raw row, commits them in one durable
//! transaction and answers them all (`benches/baseline.rs` over HTTPS,
//! `benches/writer.rs` in-process).

use std::sync::{mpsc, Arc};

use redb::{Database, Durability, TableDefinition};
use tokio::sync::oneshot;

/// The rows the bare writer appends, keyed by a counter.
pub const ROWS: TableDefinition<u64, &[u8]> = TableDefinition::new("rows");

/// A row to write and where to say whether its commit succeeded.
pub type Write = (Vec<u8>, oneshot::Sender<bool>);

/// Starts the writer thread on `db`; it ends when every sender is gone.
pub fn spawn(db: Arc<Database>) -> mpsc::Sender<Write> {
    let (tx, rx) = mpsc::channel::<Write>();
    std::thread::spawn(move || {
        let mut next: u64 = 0;
        while let Ok(first) = rx.recv() {
            let mut batch = vec![first];
            while let Ok(more) = rx.try_recv() {
                batch.push(more);
            }
            let ok = (|| -> Result<(), redb::Error> {
                let mut txn = db.begin_write()?;
                txn.set_durability(Durability::Immediate)?;
                {
                    let mut rows = txn.open_table(ROWS)?;
                    for (body, _) in &batch {
                        next += 1;
                        rows.insert(next, body.as_slice())?;
                    }
                }
                txn.commit()?;
                Ok(())
            })()
            .is_ok();
            for (_, answer) in batch {
                let _ = answer.send(ok);
            }
        }
    });
    tx
}
