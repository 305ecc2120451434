//! C ABI over Hugging Face's `tokenizers` crate for the Go package
//! models/hftok. The header is models/hftok/hftok.h; keep both in step.
//!
//! Ownership: every pointer returned to the caller is freed by the matching
//! `hftok_*_free` call. Input strings arrive as (pointer, length) pairs of
//! valid UTF-8 (the Go side replaces invalid bytes first) and are not kept.
//! No panic crosses the boundary: each entry point catches it and reports
//! an error.

use std::collections::HashMap;
use std::ffi::{c_char, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, RwLock};

use tokenizers::utils::truncation::TruncationError;
use tokenizers::{
    EncodeInput, Encoding, PostProcessor, Tokenizer, TruncationDirection, TruncationParams,
    TruncationStrategy,
};

pub const HFTOK_OK: i32 = 0;
pub const HFTOK_ERR: i32 = 1;
pub const HFTOK_ERR_TOO_SHORT: i32 = 2;
pub const HFTOK_ERR_MAX_LEN: i32 = 3;

const MAX_TRUNCATED: usize = 8;

/// A loaded tokenizer: `base` has truncation and padding off; `truncated`
/// caches one clone per (max length, strategy), because HF applies
/// truncation inside encode (it stops tokenizing early) from the
/// tokenizer's own settings, which `&self` calls cannot change. Callers use
/// a handful of settings; past MAX_TRUNCATED the cache starts over, so a
/// caller cycling through many cannot grow it without bound.
pub struct Handle {
    base: Tokenizer,
    pad_id: i64,
    truncated: RwLock<HashMap<(usize, u8), Arc<Tokenizer>>>,
}

/// One encoding; the pointers point into `owner` (an `Out`).
#[repr(C)]
pub struct hftok_encoding {
    ids: *const u32,
    type_ids: *const u32,
    attention_mask: *const u32,
    offsets: *const usize,
    len: usize,
    owner: *mut Out,
}

pub struct Out {
    enc: Encoding,
    offsets: Vec<usize>,
}

fn set_err(err: *mut *mut c_char, msg: String) {
    if err.is_null() {
        return;
    }
    let c = CString::new(msg.replace('\0', " ")).unwrap_or_default();
    unsafe { *err = c.into_raw() };
}

fn panic_msg(p: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        format!("panic: {s}")
    } else if let Some(s) = p.downcast_ref::<String>() {
        format!("panic: {s}")
    } else {
        "panic in tokenizers".to_string()
    }
}

unsafe fn str_arg<'a>(p: *const u8, n: usize) -> Result<&'a str, String> {
    if n == 0 {
        return Ok("");
    }
    if p.is_null() {
        return Err("null text pointer".to_string());
    }
    std::str::from_utf8(std::slice::from_raw_parts(p, n)).map_err(|e| format!("text is not UTF-8: {e}"))
}

/// Unwraps the caught result of an entry point: the value, or None with
/// *err set (from the error or the panic).
fn caught<T>(r: std::thread::Result<Result<T, String>>, err: *mut *mut c_char) -> Option<T> {
    match r {
        Ok(Ok(v)) => Some(v),
        Ok(Err(e)) => {
            set_err(err, e);
            None
        }
        Err(p) => {
            set_err(err, panic_msg(p));
            None
        }
    }
}

fn load(t: Tokenizer) -> Result<Handle, String> {
    let mut t = t;
    // Padding is the caller's (batches are padded in Go); record its id.
    let pad_id = match t.get_padding() {
        Some(p) => p.pad_id as i64,
        None => ["[PAD]", "<pad>", "<PAD>", "<|padding|>"]
            .iter()
            .find_map(|s| t.token_to_id(s))
            .map_or(-1, |id| id as i64),
    };
    t.with_padding(None);
    t.with_truncation(None).map_err(|e| e.to_string())?;
    Ok(Handle { base: t, pad_id, truncated: RwLock::new(HashMap::new()) })
}

/// Loads a tokenizer.json file. Returns NULL and sets *err on failure.
#[no_mangle]
pub unsafe extern "C" fn hftok_from_file(path: *const c_char, err: *mut *mut c_char) -> *mut Handle {
    let r = catch_unwind(|| {
        if path.is_null() {
            return Err("null path".to_string());
        }
        let p = CStr::from_ptr(path).to_str().map_err(|e| e.to_string())?;
        let t = Tokenizer::from_file(p).map_err(|e| e.to_string())?;
        load(t)
    });
    caught(r, err).map_or(std::ptr::null_mut(), |h| Box::into_raw(Box::new(h)))
}

/// Frees a handle from hftok_from_file (NULL is ignored).
#[no_mangle]
pub unsafe extern "C" fn hftok_free(h: *mut Handle) {
    if !h.is_null() {
        drop(Box::from_raw(h));
    }
}

/// Frees an error string.
#[no_mangle]
pub unsafe extern "C" fn hftok_string_free(s: *mut c_char) {
    if !s.is_null() {
        drop(CString::from_raw(s));
    }
}

/// The pad id: the tokenizer.json padding block's, else the id of [PAD],
/// <pad>, <PAD> or <|padding|>, else -1.
#[no_mangle]
pub unsafe extern "C" fn hftok_pad_id(h: *const Handle) -> i64 {
    if h.is_null() {
        return -1;
    }
    (*h).pad_id
}

/// The vocabulary size, added tokens included.
#[no_mangle]
pub unsafe extern "C" fn hftok_vocab_size(h: *const Handle) -> usize {
    if h.is_null() {
        return 0;
    }
    (*h).base.get_vocab_size(true)
}

/// The number of special tokens the post-processor adds to a single text
/// (pair = false) or a pair.
#[no_mangle]
pub unsafe extern "C" fn hftok_added_tokens(h: *const Handle, pair: bool) -> usize {
    if h.is_null() {
        return 0;
    }
    (*h).base.get_post_processor().map_or(0, |p| p.added_tokens(pair))
}

fn tokenizer_for(h: &Handle, max_len: usize, strategy: u8) -> Result<Arc<Tokenizer>, String> {
    let key = (max_len, strategy);
    if let Some(t) = h.truncated.read().map_err(|e| e.to_string())?.get(&key) {
        return Ok(t.clone());
    }
    let strategy = match strategy {
        0 => TruncationStrategy::LongestFirst,
        1 => TruncationStrategy::OnlyFirst,
        2 => TruncationStrategy::OnlySecond,
        s => return Err(format!("unknown truncation strategy {s}")),
    };
    let mut t = h.base.clone();
    t.with_truncation(Some(TruncationParams {
        max_length: max_len,
        strategy,
        stride: 0,
        direction: TruncationDirection::Right,
    }))
    .map_err(|e| e.to_string())?;
    let t = Arc::new(t);
    let mut cache = h.truncated.write().map_err(|e| e.to_string())?;
    if cache.len() >= MAX_TRUNCATED {
        cache.clear();
    }
    cache.insert(key, t.clone());
    Ok(t)
}

/// Encodes text a, or the pair (a, b) when pair is true. max_len > 0
/// truncates to that many tokens, special tokens included, with strategy
/// 0 longest_first, 1 only_first, 2 only_second; max_len 0 does not
/// truncate. Offsets (byte offsets into the text each token came from, two
/// per token) are filled when want_offsets is true. Returns HFTOK_OK and
/// fills *out (free it with hftok_encoding_free), or an HFTOK_ERR* code
/// with *err set.
#[no_mangle]
pub unsafe extern "C" fn hftok_encode(
    h: *const Handle,
    a: *const u8,
    a_len: usize,
    b: *const u8,
    b_len: usize,
    pair: bool,
    max_len: usize,
    strategy: u8,
    add_special: bool,
    want_offsets: bool,
    out: *mut hftok_encoding,
    err: *mut *mut c_char,
) -> i32 {
    let r = catch_unwind(AssertUnwindSafe(|| -> Result<Box<Out>, (i32, String)> {
        if h.is_null() || out.is_null() {
            return Err((HFTOK_ERR, "null handle or output".to_string()));
        }
        let h = &*h;
        let a = str_arg(a, a_len).map_err(|e| (HFTOK_ERR, e))?;
        let input: EncodeInput = if pair {
            let b = str_arg(b, b_len).map_err(|e| (HFTOK_ERR, e))?;
            (a, b).into()
        } else {
            a.into()
        };
        let owned;
        let t: &Tokenizer = if max_len == 0 {
            &h.base
        } else {
            let added = if add_special {
                h.base.get_post_processor().map_or(0, |p| p.added_tokens(pair))
            } else {
                0
            };
            if max_len < added {
                return Err((HFTOK_ERR_MAX_LEN, format!("max length {max_len} < {added} special tokens")));
            }
            owned = tokenizer_for(h, max_len, strategy).map_err(|e| (HFTOK_ERR, e))?;
            &owned
        };
        let enc = t.encode(input, add_special).map_err(|e| {
            let code = match e.downcast_ref::<TruncationError>() {
                Some(TruncationError::SequenceTooShort) => HFTOK_ERR_TOO_SHORT,
                _ => HFTOK_ERR,
            };
            (code, e.to_string())
        })?;
        let mut offsets = Vec::new();
        if want_offsets {
            offsets.reserve(enc.get_offsets().len() * 2);
            for &(s, e) in enc.get_offsets() {
                offsets.push(s);
                offsets.push(e);
            }
        }
        Ok(Box::new(Out { enc, offsets }))
    }));
    match r {
        Ok(Ok(o)) => {
            let o = Box::into_raw(o);
            let e = &(*o).enc;
            *out = hftok_encoding {
                ids: e.get_ids().as_ptr(),
                type_ids: e.get_type_ids().as_ptr(),
                attention_mask: e.get_attention_mask().as_ptr(),
                offsets: if want_offsets { (*o).offsets.as_ptr() } else { std::ptr::null() },
                len: e.get_ids().len(),
                owner: o,
            };
            HFTOK_OK
        }
        Ok(Err((code, msg))) => {
            set_err(err, msg);
            code
        }
        Err(p) => {
            set_err(err, panic_msg(p));
            HFTOK_ERR
        }
    }
}

/// Frees what hftok_encode filled in (a zeroed struct is ignored).
#[no_mangle]
pub unsafe extern "C" fn hftok_encoding_free(e: *mut hftok_encoding) {
    if e.is_null() || (*e).owner.is_null() {
        return;
    }
    drop(Box::from_raw((*e).owner));
    (*e).owner = std::ptr::null_mut();
}

/// Decodes ids to text (skipping special tokens when asked). Returns NULL
/// and sets *err on failure; free the result with hftok_string_free.
#[no_mangle]
pub unsafe extern "C" fn hftok_decode(
    h: *const Handle,
    ids: *const u32,
    n: usize,
    skip_special: bool,
    err: *mut *mut c_char,
) -> *mut c_char {
    let r = catch_unwind(|| -> Result<String, String> {
        if h.is_null() || (ids.is_null() && n > 0) {
            return Err("null handle or ids".to_string());
        }
        let ids = if n == 0 { &[][..] } else { std::slice::from_raw_parts(ids, n) };
        (*h).base.decode(ids, skip_special).map_err(|e| e.to_string())
    });
    caught(r, err).map_or(std::ptr::null_mut(), |s| CString::new(s.replace('\0', "")).unwrap_or_default().into_raw())
}
