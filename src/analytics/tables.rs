//! The Parquet files: a day's file being written, the writers of a run, the schemas and
//! batches of the three tables, `sessions/sessions.parquet` from the manifest's rows.

use super::manifest::Kept;
use super::out::{BATCH, BUFFERED, ExportError, ROW_GROUP, SESSIONS_FILE, Table, arrow, io, new_file, pq, temporary};
use super::rows::{EntryRow, SessionRow, UsageRow};
use arrow_array::cast::AsArray;
use arrow_array::{
    ArrayRef, BooleanArray, Float64Array, Int64Array, RecordBatch, StringArray, TimestampMillisecondArray,
};
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Rows of one session and day for a table, to the writing thread.
pub(crate) struct Msg {
    pub(crate) table: Table,
    pub(crate) day: String,
    pub(crate) session: String,
    pub(crate) batch: RecordBatch,
}

/// A day's file being written: under its temporary name until the run commits.
pub(crate) struct DayWriter {
    pub(crate) w: ArrowWriter<std::fs::File>,
    /// Relative paths: the temporary file and the day's file.
    pub(crate) tmp: String,
    pub(crate) fin: String,
    /// Rows written or waiting, and the sessions whose rows came this run (or were copied
    /// in for an append then skipped): if one of them failed, its rows are taken out.
    pub(crate) rows: u64,
    pub(crate) sessions: HashSet<String>,
    /// Batches not written yet, and their size in memory: written together as a row
    /// group (an open row group holds a compressor per column).
    pub(crate) waiting: Vec<RecordBatch>,
    pub(crate) waiting_bytes: usize,
}

impl DayWriter {
    /// Write the waiting batches as one row group (or more, past [`ROW_GROUP`] rows).
    pub(crate) fn write_waiting(&mut self, out: &Path) -> Result<(), ExportError> {
        if self.waiting.is_empty() {
            return Ok(());
        }
        let path = out.join(&self.tmp);
        let batch =
            arrow_select::concat::concat_batches(&self.waiting[0].schema(), &self.waiting).map_err(arrow(&path))?;
        self.waiting.clear();
        self.waiting_bytes = 0;
        self.w.write(&batch).map_err(pq(&path))?;
        self.w.flush().map_err(pq(&path))
    }
}

/// The open day files of both tables, on the writing thread.
pub(crate) struct Writers<'k> {
    pub(crate) out: PathBuf,
    pub(crate) with_text: bool,
    /// Sessions whose rows stay as they are: the rows copied from old day files.
    pub(crate) kept: &'k HashSet<String>,
    pub(crate) open: BTreeMap<(Table, String), DayWriter>,
    pub(crate) copied: u64,
    /// Bytes of batches waiting, in all.
    pub(crate) waiting: usize,
}

/// zstd, dictionaries (but for columns of values seldom repeated: ids, keys, texts), page
/// statistics, row groups of up to [`ROW_GROUP`] rows.
pub(crate) fn props() -> WriterProperties {
    let unique = ["entry_id", "parent_id", "dedup_key", "text"];
    unique
        .iter()
        .fold(WriterProperties::builder(), |b, c| {
            b.set_column_dictionary_enabled(parquet::schema::types::ColumnPath::from(*c), false)
        })
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(1).expect("level 1 exists")))
        .set_dictionary_enabled(true)
        .set_statistics_enabled(EnabledStatistics::Page)
        .set_max_row_group_row_count(Some(ROW_GROUP))
        .set_created_by(format!("pi-session {}", env!("CARGO_PKG_VERSION")))
        .build()
}

impl<'k> Writers<'k> {
    pub(crate) fn new(out: &Path, with_text: bool, kept: &'k HashSet<String>) -> Writers<'k> {
        Writers {
            out: out.to_path_buf(),
            with_text,
            kept,
            open: BTreeMap::new(),
            copied: 0,
            waiting: 0,
        }
    }

    pub(crate) fn schema(&self, t: Table) -> SchemaRef {
        match t {
            Table::Entries => entries_schema(self.with_text),
            Table::Usage => usage_schema(),
        }
    }

    /// The day's writer, made on first use with the rows the old day file keeps.
    pub(crate) fn open(&mut self, t: Table, d: &str) -> Result<&mut DayWriter, ExportError> {
        let key = (t, d.to_string());
        if !self.open.contains_key(&key) {
            let fin = t.day_file(d);
            let tmp = temporary(&fin);
            let path = self.out.join(&tmp);
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir).map_err(io(dir))?;
            }
            let file = new_file(&path)?;
            let w = ArrowWriter::try_new(file, self.schema(t), Some(props())).map_err(pq(&path))?;
            let mut dw = DayWriter {
                w,
                tmp,
                fin: fin.clone(),
                rows: 0,
                sessions: HashSet::new(),
                waiting: Vec::new(),
                waiting_bytes: 0,
            };
            let old = self.out.join(&fin);
            if !self.kept.is_empty() && old.is_file() {
                let n = copy_rows(&old, &mut dw.w, &|p| self.kept.contains(p))?;
                // (Its row group ends here: an open one holds a compressor per column.)
                dw.w.flush().map_err(pq(&path))?;
                dw.rows += n;
                self.copied += n;
            }
            self.open.insert(key.clone(), dw);
        }
        Ok(self.open.get_mut(&key).expect("made above"))
    }

    /// Take a batch; past the memory budget, the day with the most rows waiting writes
    /// them.
    pub(crate) fn take(&mut self, m: Msg) -> Result<(), ExportError> {
        let bytes = m.batch.get_array_memory_size();
        let dw = self.open(m.table, &m.day)?;
        dw.rows += m.batch.num_rows() as u64;
        dw.sessions.insert(m.session);
        dw.waiting.push(m.batch);
        dw.waiting_bytes += bytes;
        let full = dw.waiting.iter().map(RecordBatch::num_rows).sum::<usize>() >= ROW_GROUP;
        self.waiting += bytes;
        let out = self.out.clone();
        if full {
            let dw = self.open.get_mut(&(m.table, m.day)).expect("opened above");
            self.waiting -= dw.waiting_bytes;
            dw.write_waiting(&out)?;
        }
        while self.waiting > BUFFERED {
            let Some(big) = self.open.values_mut().max_by_key(|d| d.waiting_bytes) else {
                break;
            };
            self.waiting -= big.waiting_bytes;
            big.write_waiting(&out)?;
        }
        Ok(())
    }

    /// Close every file. Rows of `failed` sessions (read in part, or kept from before an
    /// append and then skipped) are taken out again.
    /// Returns the renames to make, the day files to delete (days left without rows) and
    /// the rows copied from old files.
    #[allow(clippy::type_complexity)]
    pub(crate) fn close(
        self,
        failed: &HashSet<String>,
    ) -> Result<(Vec<(String, String)>, Vec<String>, u64), ExportError> {
        use rayon::prelude::*;
        let out = &self.out;
        // Most rows wait until here (a day's file is one row group): the days are
        // encoded in parallel.
        let days: Vec<DayWriter> = self.open.into_values().collect();
        let closed = days
            .into_par_iter()
            .map(|dw| close_day(out, dw, failed))
            .collect::<Result<Vec<_>, ExportError>>()?;
        let mut renames = Vec::new();
        let mut deletions = Vec::new();
        for c in closed {
            match c {
                Ok(rename) => renames.push(rename),
                Err(deleted) => deletions.push(deleted),
            }
        }
        Ok((renames, deletions, self.copied))
    }
}

/// Write a day's waiting rows and close its file; rows of `failed` sessions are taken out
/// again. The rename to make (temporary, final), or the day file to delete when no row is
/// left.
pub(crate) fn close_day(
    out: &Path,
    mut dw: DayWriter,
    failed: &HashSet<String>,
) -> Result<Result<(String, String), String>, ExportError> {
    let tmp = out.join(&dw.tmp);
    dw.write_waiting(out)?;
    dw.w.close().map_err(pq(&tmp))?;
    let mut rows = dw.rows;
    if dw.sessions.iter().any(|s| failed.contains(s)) {
        // Rare: a session file changed while it was read, or one appended to was then
        // skipped. Its rows go.
        let again = format!("{}.again", dw.tmp);
        let again_path = out.join(&again);
        let file = new_file(&again_path)?;
        let schema = ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(&tmp).map_err(io(&tmp))?)
            .map_err(pq(&tmp))?
            .schema()
            .clone();
        let mut w = ArrowWriter::try_new(file, schema, Some(props())).map_err(pq(&again_path))?;
        rows = copy_rows(&tmp, &mut w, &|p| !failed.contains(p))?;
        w.close().map_err(pq(&again_path))?;
        crate::files::rename_over(&again_path, &tmp).map_err(io(&tmp))?;
    }
    if rows == 0 {
        crate::files::remove(&tmp).map_err(io(&tmp))?;
        Ok(Err(dw.fin))
    } else {
        Ok(Ok((dw.tmp, dw.fin)))
    }
}

/// Copy the rows of `src` whose `session_path` `keep` says to keep into `w`; how many.
pub(crate) fn copy_rows(
    src: &Path,
    w: &mut ArrowWriter<std::fs::File>,
    keep: &dyn Fn(&str) -> bool,
) -> Result<u64, ExportError> {
    let file = std::fs::File::open(src).map_err(io(src))?;
    let reader = ParquetRecordBatchReaderBuilder::try_new(file)
        .map_err(pq(src))?
        .with_batch_size(BATCH)
        .build()
        .map_err(pq(src))?;
    let mut n = 0;
    for batch in reader {
        let batch = batch.map_err(arrow(src))?;
        let Some(col) = batch.column_by_name("session_path") else {
            continue;
        };
        let paths = col.as_string::<i32>();
        let mask: BooleanArray = paths.iter().map(|p| Some(p.is_some_and(keep))).collect();
        let kept = arrow_select::filter::filter_record_batch(&batch, &mask).map_err(arrow(src))?;
        if kept.num_rows() > 0 {
            w.write(&kept).map_err(pq(src))?;
            n += kept.num_rows() as u64;
        }
    }
    Ok(n)
}

pub(crate) fn utc_ms() -> DataType {
    DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into()))
}

/// The `entries` table's columns (`text` only with `--with-text`).
pub(crate) fn entries_schema(with_text: bool) -> SchemaRef {
    let mut f = vec![
        Field::new("session_id", DataType::Utf8, true),
        Field::new("session_path", DataType::Utf8, false),
        Field::new("entry_id", DataType::Utf8, true),
        Field::new("parent_id", DataType::Utf8, true),
        Field::new("type", DataType::Utf8, true),
        Field::new("role", DataType::Utf8, true),
        Field::new("timestamp", utc_ms(), true),
        Field::new("on_branch", DataType::Boolean, false),
        Field::new("provider", DataType::Utf8, true),
        Field::new("model", DataType::Utf8, true),
        Field::new("tool_name", DataType::Utf8, true),
        Field::new("is_error", DataType::Boolean, true),
        Field::new("text_length", DataType::Int64, true),
        Field::new("byte_offset", DataType::Int64, false),
        Field::new("byte_length", DataType::Int64, false),
        Field::new("line", DataType::Int64, false),
    ];
    if with_text {
        f.push(Field::new("text", DataType::Utf8, true));
    }
    Arc::new(Schema::new(f))
}

pub(crate) fn usage_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("session_id", DataType::Utf8, true),
        Field::new("session_path", DataType::Utf8, false),
        Field::new("session_created", utc_ms(), true),
        Field::new("dedup_key", DataType::Utf8, false),
        Field::new("source", DataType::Utf8, false),
        Field::new("provider", DataType::Utf8, false),
        Field::new("model", DataType::Utf8, false),
        Field::new("time", utc_ms(), true),
        Field::new("input_tokens", DataType::Int64, false),
        Field::new("output_tokens", DataType::Int64, false),
        Field::new("cache_read_tokens", DataType::Int64, false),
        Field::new("cache_write_tokens", DataType::Int64, false),
        Field::new("total_tokens", DataType::Int64, false),
        Field::new("cost", DataType::Float64, false),
    ]))
}

pub(crate) fn sessions_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("path", DataType::Utf8, false),
        Field::new("id", DataType::Utf8, true),
        Field::new("cwd", DataType::Utf8, false),
        Field::new("name", DataType::Utf8, true),
        Field::new("parent_session_path", DataType::Utf8, true),
        Field::new("created", utc_ms(), true),
        Field::new("modified", utc_ms(), true),
        Field::new("message_count", DataType::Int64, false),
        Field::new("first_message", DataType::Utf8, false),
        Field::new("version", DataType::Float64, true),
        Field::new("header_timestamp", DataType::Utf8, true),
        Field::new("file_bytes", DataType::Int64, false),
        Field::new("lines", DataType::Int64, false),
        Field::new("entries", DataType::Int64, false),
        Field::new("skipped_lines", DataType::Int64, false),
        Field::new("leaf_id", DataType::Utf8, true),
    ]))
}

fn strings<'r, R: 'r>(rows: &'r [R], f: impl Fn(&'r R) -> Option<&'r str>) -> ArrayRef {
    Arc::new(rows.iter().map(f).collect::<StringArray>())
}

fn ints<R>(rows: &[R], f: impl Fn(&R) -> Option<i64>) -> ArrayRef {
    Arc::new(rows.iter().map(f).collect::<Int64Array>())
}

fn times<R>(rows: &[R], f: impl Fn(&R) -> Option<i64>) -> ArrayRef {
    Arc::new(
        rows.iter()
            .map(f)
            .collect::<TimestampMillisecondArray>()
            .with_timezone("UTC"),
    )
}

pub(crate) fn count(n: u64) -> Option<i64> {
    Some(i64::try_from(n).unwrap_or(i64::MAX))
}

pub(crate) fn entries_batch(
    schema: &SchemaRef,
    rows: &[EntryRow],
    session: &(Option<String>, String, Option<i64>),
) -> Result<RecordBatch, arrow_schema::ArrowError> {
    let n = rows.len();
    let mut cols: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from(vec![session.0.as_deref(); n])),
        Arc::new(StringArray::from(vec![Some(session.1.as_str()); n])),
        strings(rows, |r| r.id.as_deref()),
        strings(rows, |r| r.parent_id.as_deref()),
        strings(rows, |r| r.ty.as_deref()),
        strings(rows, |r| r.role.as_deref()),
        times(rows, |r| r.timestamp_ms),
        Arc::new(rows.iter().map(|r| Some(r.on_branch)).collect::<BooleanArray>()),
        strings(rows, |r| r.provider.as_deref()),
        strings(rows, |r| r.model.as_deref()),
        strings(rows, |r| r.tool_name.as_deref()),
        Arc::new(rows.iter().map(|r| r.is_error).collect::<BooleanArray>()),
        ints(rows, |r| r.text_len.and_then(count)),
        ints(rows, |r| count(r.offset)),
        ints(rows, |r| count(r.length)),
        ints(rows, |r| count(r.line)),
    ];
    if schema.fields().len() > cols.len() {
        cols.push(strings(rows, |r| r.text.as_deref()));
    }
    RecordBatch::try_new(schema.clone(), cols)
}

pub(crate) fn usage_batch(
    schema: &SchemaRef,
    rows: &[UsageRow],
    session: &(Option<String>, String, Option<i64>),
) -> Result<RecordBatch, arrow_schema::ArrowError> {
    let n = rows.len();
    let cols: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from(vec![session.0.as_deref(); n])),
        Arc::new(StringArray::from(vec![Some(session.1.as_str()); n])),
        Arc::new(
            std::iter::repeat_n(session.2, n)
                .collect::<TimestampMillisecondArray>()
                .with_timezone("UTC"),
        ),
        strings(rows, |r| Some(r.dedup_key.as_str())),
        strings(rows, |r| Some(r.source)),
        strings(rows, |r| Some(r.provider.as_str())),
        strings(rows, |r| Some(r.model.as_str())),
        times(rows, |r| r.time_ms),
        ints(rows, |r| count(r.input)),
        ints(rows, |r| count(r.output)),
        ints(rows, |r| count(r.cache_read)),
        ints(rows, |r| count(r.cache_write)),
        ints(rows, |r| {
            count(
                r.input
                    .saturating_add(r.output)
                    .saturating_add(r.cache_read)
                    .saturating_add(r.cache_write),
            )
        }),
        Arc::new(rows.iter().map(|r| Some(r.cost)).collect::<Float64Array>()),
    ];
    RecordBatch::try_new(schema.clone(), cols)
}

/// `sessions/sessions.parquet`, from the manifest's rows (by path), under its temporary
/// name: the rename to make.
pub(crate) fn write_sessions(out: &Path, keep: &BTreeMap<String, Kept>) -> Result<(String, String), ExportError> {
    let rows: Vec<&SessionRow> = keep.values().map(|k| &k.row).collect();
    let schema = sessions_schema();
    let fin = SESSIONS_FILE.to_string();
    let tmp = temporary(&fin);
    let path = out.join(&tmp);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io(dir))?;
    }
    let file = new_file(&path)?;
    let mut w = ArrowWriter::try_new(file, schema.clone(), Some(props())).map_err(pq(&path))?;
    for chunk in rows.chunks(BATCH) {
        let cols: Vec<ArrayRef> = vec![
            strings(chunk, |r| Some(r.path.as_str())),
            strings(chunk, |r| r.id.as_deref()),
            strings(chunk, |r| Some(r.cwd.as_str())),
            strings(chunk, |r| r.name.as_deref()),
            strings(chunk, |r| r.parent_session_path.as_deref()),
            times(chunk, |r| r.created_ms),
            times(chunk, |r| r.modified_ms),
            ints(chunk, |r| count(r.message_count)),
            strings(chunk, |r| Some(r.first_message.as_str())),
            Arc::new(chunk.iter().map(|r| r.version).collect::<Float64Array>()),
            strings(chunk, |r| r.header_timestamp.as_deref()),
            ints(chunk, |r| count(r.file_bytes)),
            ints(chunk, |r| count(r.lines)),
            ints(chunk, |r| count(r.entries)),
            ints(chunk, |r| count(r.skipped_lines)),
            strings(chunk, |r| r.leaf_id.as_deref()),
        ];
        let batch = RecordBatch::try_new(schema.clone(), cols).map_err(arrow(&path))?;
        w.write(&batch).map_err(pq(&path))?;
    }
    w.close().map_err(pq(&path))?;
    Ok((tmp, fin))
}
