//! The agent's half of a delta upload: `Op::BlockSignatures` describes the old file block
//! by block, `Op::WriteDelta` rebuilds the new one into the upload's staging file from
//! ranges of the old file and literal bytes. Both stream: a block at a time.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;

use turbo_proto::{
    BlockSignature, BlockSignatures, DELTA_BLOCK_MAX, DELTA_BLOCK_MIN, DELTA_BLOCKS_MAX,
    DeltaInstruction, ErrorKind, OpError, OpResult,
};

use super::{Agent, io_error, op_error};

pub fn block_signatures(
    agent: &mut Agent,
    path: &str,
    block_size: u32,
) -> Result<OpResult, OpError> {
    if !(DELTA_BLOCK_MIN..=DELTA_BLOCK_MAX).contains(&block_size) {
        return Err(op_error(
            ErrorKind::InvalidArgument,
            format!("block size {block_size} is outside {DELTA_BLOCK_MIN}..={DELTA_BLOCK_MAX}"),
        ));
    }
    let path = agent.expand(path);
    let none = OpResult::Signatures(BlockSignatures {
        exists: false,
        size: 0,
        block_size,
        blocks: Vec::new(),
    });
    let mut file = match File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(none),
        Err(e) => return Err(io_error(e, &path)),
    };
    let meta = file.metadata().map_err(|e| io_error(e, &path))?;
    if !meta.is_file() {
        return Ok(none);
    }
    let size = meta.len();
    if size.div_ceil(block_size as u64) > DELTA_BLOCKS_MAX {
        return Err(op_error(
            ErrorKind::InvalidArgument,
            format!(
                "{} needs more than {DELTA_BLOCKS_MAX} blocks of {block_size} bytes",
                path.display()
            ),
        ));
    }
    let mut blocks = Vec::with_capacity(size.div_ceil(block_size as u64) as usize);
    let mut buf = vec![0u8; block_size as usize];
    loop {
        let n = read_up_to(&mut file, &mut buf).map_err(|e| io_error(e, &path))?;
        if n == 0 {
            break;
        }
        blocks.push(signature(&buf[..n]));
        if n < buf.len() {
            break;
        }
    }
    Ok(OpResult::Signatures(BlockSignatures {
        exists: true,
        size,
        block_size,
        blocks,
    }))
}

fn signature(block: &[u8]) -> BlockSignature {
    turbo_proto::delta::signature(block, super::encode::strong)
}

pub fn write_delta(
    agent: &mut Agent,
    upload_id: u64,
    basis: &str,
    instructions: &[DeltaInstruction],
) -> Result<OpResult, OpError> {
    let basis = agent.expand(basis);
    let staged = agent.staged_path(upload_id)?;
    let mut out = OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(&staged)
        .map_err(|e| io_error(e, &staged))?;
    let mut old: Option<File> = None;
    for instruction in instructions {
        match instruction {
            DeltaInstruction::Literal(bytes) => {
                out.write_all(bytes).map_err(|e| io_error(e, &staged))?
            }
            DeltaInstruction::Copy { offset, len } => {
                if old.is_none() {
                    old = Some(File::open(&basis).map_err(|e| io_error(e, &basis))?);
                }
                let file = old.as_mut().expect("opened above");
                file.seek(SeekFrom::Start(*offset))
                    .map_err(|e| io_error(e, &basis))?;
                let copied =
                    io::copy(&mut file.take(*len), &mut out).map_err(|e| io_error(e, &staged))?;
                if copied != *len {
                    return Err(op_error(
                        ErrorKind::InvalidArgument,
                        format!(
                            "{} is shorter than the delta expects ({len} bytes at {offset})",
                            basis.display()
                        ),
                    ));
                }
            }
        }
    }
    let size = out.metadata().map_err(|e| io_error(e, &staged))?.len();
    Ok(OpResult::Chunk { size })
}

fn read_up_to(file: &mut File, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match file.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

#[cfg(test)]
mod tests {
    use turbo_proto::rolling;

    use super::super::testutil::{TempDir, agent};
    use super::*;

    #[test]
    fn signatures_describe_each_block_and_a_missing_file_is_an_answer() {
        let dir = TempDir::new();
        let mut agent = agent(dir.path());
        let data: Vec<u8> = (0..2500u32).map(|i| (i % 253) as u8).collect();
        std::fs::write(dir.join("f"), &data).unwrap();
        let OpResult::Signatures(sigs) = block_signatures(&mut agent, &dir.str("f"), 1024).unwrap()
        else {
            panic!()
        };
        assert!(sigs.exists);
        assert_eq!(sigs.size, 2500);
        assert_eq!(sigs.blocks.len(), 3);
        assert_eq!(sigs.blocks[2].weak, rolling::weak(&data[2048..]));
        assert_eq!(sigs.blocks[1], signature(&data[1024..2048]));
        let OpResult::Signatures(none) =
            block_signatures(&mut agent, &dir.str("missing"), 1024).unwrap()
        else {
            panic!()
        };
        assert!(!none.exists);
        assert!(block_signatures(&mut agent, &dir.str("f"), 10).is_err());
    }

    #[test]
    fn a_delta_rebuilds_from_ranges_and_literals_into_the_staging_file() {
        let dir = TempDir::new();
        let mut agent = agent(dir.path());
        std::fs::write(dir.join("old"), b"0123456789").unwrap();
        let steps = [
            DeltaInstruction::Copy { offset: 5, len: 5 },
            DeltaInstruction::Literal(b"-new-".to_vec()),
            DeltaInstruction::Copy { offset: 0, len: 3 },
        ];
        let got = write_delta(&mut agent, 7, &dir.str("old"), &steps).unwrap();
        assert_eq!(got, OpResult::Chunk { size: 13 });
        let staged = agent.staged_path(7).unwrap();
        assert_eq!(std::fs::read(&staged).unwrap(), b"56789-new-012");
        let past_end = [DeltaInstruction::Copy { offset: 8, len: 5 }];
        assert!(write_delta(&mut agent, 8, &dir.str("old"), &past_end).is_err());
    }
}
