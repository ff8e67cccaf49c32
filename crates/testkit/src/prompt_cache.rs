//! The fake Anthropic server's model of the prompt cache, so that a test can measure what a client's
//! `cache_control` breakpoints would save (harness/PROTOCOLS.md §2, Anthropic's prompt caching):
//!
//! - A request is a sequence of blocks in the API's cache order: each tool, each system block, then each
//!   message's content blocks (a message's role counts as part of its first block). A block's size in
//!   tokens is estimated as a quarter of the bytes of its JSON (without its `cache_control`), rounded up:
//!   a fake has no tokenizer, and the share of tokens read from the cache depends on relative sizes only.
//! - A block with `cache_control` is a breakpoint: the prefix up to and including it is written to the
//!   cache, if it is at least the minimum cacheable length (1,024 tokens on most models) and was not read
//!   from the cache.
//! - A request reads the longest cached prefix ending at a block boundary no more than 20 blocks before one
//!   of its breakpoints (the API's look-back); prefixes are keyed by the model and every byte before.
//! - Usage is then reported as the API does, in three disjoint counts: `cache_read_input_tokens` (the
//!   prefix read), `cache_creation_input_tokens` (from there to the last breakpoint written) and
//!   `input_tokens` (the rest).
//!
//! Entries never expire (the API's last five minutes unless read): tests are shorter than that.

use std::collections::HashSet;

use serde_json::Value;

/// How many blocks before a breakpoint the API looks for a cached prefix.
const LOOK_BACK: usize = 20;

/// What one request would be billed for, in tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CacheUsage {
    /// Input neither read from nor written to the cache.
    pub input: u64,
    /// Input read from the cache.
    pub cache_read: u64,
    /// Input written to the cache.
    pub cache_write: u64,
}

impl CacheUsage {
    /// All input tokens of the request.
    pub fn total(&self) -> u64 {
        self.input + self.cache_read + self.cache_write
    }
}

/// The prefixes written so far. [`crate::FakeAnthropic::model_prompt_cache`] keeps one; a test can also
/// run one over recorded request bodies, to see what another minimum length would have cached.
#[derive(Debug)]
pub struct PromptCache {
    min_tokens: u64,
    written: HashSet<u64>,
}

/// One block of a request: the hash of the prefix up to and including it, the tokens up to and including
/// it, and whether it is a breakpoint.
struct Boundary {
    prefix: u64,
    tokens: u64,
    breakpoint: bool,
}

impl PromptCache {
    /// An empty cache that keeps prefixes of at least `min_tokens`.
    pub fn new(min_tokens: u64) -> Self {
        PromptCache {
            min_tokens,
            written: HashSet::new(),
        }
    }

    /// Reads and writes the cache for the request `body` and says what it would be billed for.
    pub fn usage(&mut self, body: &Value) -> CacheUsage {
        let boundaries = boundaries(body);
        let total = boundaries.last().map_or(0, |b| b.tokens);
        let breakpoints: Vec<usize> = (0..boundaries.len())
            .filter(|&i| boundaries[i].breakpoint)
            .collect();
        let in_reach = |i: usize| breakpoints.iter().any(|&b| b >= i && b - i <= LOOK_BACK);
        let read = (0..boundaries.len())
            .rev()
            .find(|&i| in_reach(i) && self.written.contains(&boundaries[i].prefix));
        let read_tokens = read.map_or(0, |i| boundaries[i].tokens);
        let mut written_to = read_tokens;
        for &b in &breakpoints {
            let boundary = &boundaries[b];
            if read.is_some_and(|r| b <= r) || boundary.tokens < self.min_tokens {
                continue;
            }
            self.written.insert(boundary.prefix);
            written_to = written_to.max(boundary.tokens);
        }
        CacheUsage {
            input: total - written_to,
            cache_read: read_tokens,
            cache_write: written_to - read_tokens,
        }
    }
}

fn boundaries(body: &Value) -> Vec<Boundary> {
    let mut out: Vec<Boundary> = Vec::new();
    let mut prefix = fnv1a(FNV_OFFSET, body["model"].to_string().as_bytes());
    let mut tokens = 0;
    let mut push = |block: &Value, tag: &str| {
        let breakpoint = block.get("cache_control").is_some();
        let mut block = block.clone();
        if let Some(map) = block.as_object_mut() {
            map.remove("cache_control");
        }
        let text = block.to_string();
        prefix = fnv1a(fnv1a(prefix, tag.as_bytes()), text.as_bytes());
        tokens += u64::try_from(text.len().div_ceil(4)).unwrap_or(u64::MAX);
        out.push(Boundary {
            prefix,
            tokens,
            breakpoint,
        });
    };
    for tool in body["tools"].as_array().into_iter().flatten() {
        push(tool, "tool");
    }
    match &body["system"] {
        Value::Array(blocks) => blocks.iter().for_each(|b| push(b, "system")),
        Value::Null => {}
        text => push(text, "system"),
    }
    for message in body["messages"].as_array().into_iter().flatten() {
        let role = message["role"].as_str().unwrap_or("user");
        match &message["content"] {
            Value::Array(blocks) => {
                for (i, block) in blocks.iter().enumerate() {
                    push(block, if i == 0 { role } else { "" });
                }
            }
            text => push(text, role),
        }
    }
    out
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

fn fnv1a(seed: u64, bytes: &[u8]) -> u64 {
    bytes.iter().fold(seed, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn text(chars: usize, cached: bool) -> Value {
        let mut block = json!({"type": "text", "text": "x".repeat(chars)});
        if cached {
            block["cache_control"] = json!({"type": "ephemeral"});
        }
        block
    }

    fn body(system: Vec<Value>, messages: Vec<Value>) -> Value {
        json!({"model": "m", "system": system, "messages": messages})
    }

    fn user(blocks: Vec<Value>) -> Value {
        json!({"role": "user", "content": blocks})
    }

    #[test]
    fn a_shared_prefix_is_written_once_then_read_and_a_short_one_never_cached() {
        let mut cache = PromptCache::new(1_024);
        // ~2,000 shared tokens marked, a 400-token own block marked, a question.
        let shared = text(8_000, true);
        let first = body(
            vec![shared.clone(), text(1_600, true)],
            vec![user(vec![text(400, true)])],
        );
        let usage = cache.usage(&first);
        assert_eq!(usage.cache_read, 0);
        assert_eq!(usage.input, 0, "everything is before the last breakpoint");
        assert!(usage.cache_write > 2_400, "{usage:?}");
        // Another agent: another own block; the shared prefix is read.
        let second = body(
            vec![shared.clone(), text(1_700, true)],
            vec![user(vec![text(400, true)])],
        );
        let usage = cache.usage(&second);
        assert!(
            (2_000..2_020).contains(&usage.cache_read),
            "the shared block is read: {usage:?}"
        );
        assert_eq!(usage.total(), usage.cache_read + usage.cache_write);
        // The same request again reads all of it.
        let again = cache.usage(&second);
        assert_eq!(again.cache_read, usage.total());
        assert_eq!((again.input, again.cache_write), (0, 0));

        // Under the minimum nothing is written, so nothing is read.
        let mut cache = PromptCache::new(1_024);
        let short = body(vec![text(400, true)], vec![user(vec![text(40, false)])]);
        cache.usage(&short);
        let usage = cache.usage(&short);
        assert_eq!(usage.cache_read, 0);
        assert_eq!(usage.input, usage.total());
    }

    #[test]
    fn a_changed_byte_before_the_breakpoint_misses_and_no_breakpoint_means_no_cache() {
        let mut cache = PromptCache::new(10);
        let first = body(vec![text(400, true)], vec![user(vec![text(40, false)])]);
        cache.usage(&first);
        let changed = body(vec![text(401, true)], vec![user(vec![text(40, false)])]);
        assert_eq!(cache.usage(&changed).cache_read, 0);
        let unmarked = body(vec![text(400, false)], vec![user(vec![text(40, false)])]);
        let usage = cache.usage(&unmarked);
        assert_eq!((usage.cache_read, usage.cache_write), (0, 0));
    }
}
