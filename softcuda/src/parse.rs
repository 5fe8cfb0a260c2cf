//! PTX text to a syntax tree: module directives, entry points with their
//! `.param` lists, register and variable declarations, labels and
//! instructions with their operands, each tagged with its source line.
//!
//! The parser knows PTX *syntax* only; what an opcode means is decided by
//! [`decode`](crate::decode), so an instruction the interpreter cannot run is
//! still parsed and then rejected there with its name and line.
//! (Over 600 lines: one grammar, its lexer, parser and unit tests.)

use std::fmt;

/// A parse error with the PTX line it occurred on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// 1-based line in the PTX text.
    pub line: u32,
    /// What went wrong.
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PTX line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for ParseError {}

type Result<T> = std::result::Result<T, ParseError>;

fn err<T>(line: u32, message: impl Into<String>) -> Result<T> {
    Err(ParseError {
        line,
        message: message.into(),
    })
}

#[derive(Clone, Debug, PartialEq)]
enum Tok<'a> {
    /// Identifiers, directives, opcodes, registers, labels and numbers: any
    /// run of `[A-Za-z0-9_.$%]`.
    Word(&'a str),
    Punct(char),
    Str,
}

#[derive(Clone, Debug)]
struct Token<'a> {
    tok: Tok<'a>,
    line: u32,
}

/// FNV-1a 64 over the tokens' text (one separator byte between tokens),
/// blind to the function's position in the module: LLVM numbers a
/// function's labels (`$L__BB<function>_<block>`) and its stack depot
/// (`__local_depot<function>`) by the function's index, which every entry
/// added before it in the module shifts, though its code is the same.
fn fingerprint(toks: &[Token<'_>]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    let mut eat = |bytes: &[u8]| {
        for &b in bytes {
            h = (h ^ b as u64).wrapping_mul(0x0100_0000_01b3);
        }
    };
    for t in toks {
        match &t.tok {
            Tok::Word(w) => eat(position_free(w).as_bytes()),
            Tok::Punct(c) => eat(&[*c as u8]),
            Tok::Str => eat(b"\"\""),
        }
        eat(&[0]);
    }
    h
}

/// `w` without the function index LLVM writes into labels and depots:
/// `$L__BB31_25` is `$L__BB_25`, `__local_depot8` is `__local_depot`.
fn position_free(w: &str) -> std::borrow::Cow<'_, str> {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if let Some(rest) = w.strip_prefix("$L__BB")
        && let Some((f, block)) = rest.split_once('_')
        && digits(f)
    {
        return format!("$L__BB_{block}").into();
    }
    if let Some(f) = w.strip_prefix("__local_depot")
        && digits(f)
    {
        return "__local_depot".into();
    }
    w.into()
}

fn lex(src: &str) -> Result<Vec<Token<'_>>> {
    let bytes = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let mut line = 1u32;
    while i < bytes.len() {
        let c = bytes[i];
        match c {
            b'\n' => {
                line += 1;
                i += 1;
            }
            b' ' | b'\t' | b'\r' => i += 1,
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                let start = line;
                i += 2;
                loop {
                    if i + 1 >= bytes.len() {
                        return err(start, "unterminated /* comment");
                    }
                    if bytes[i] == b'*' && bytes[i + 1] == b'/' {
                        i += 2;
                        break;
                    }
                    if bytes[i] == b'\n' {
                        line += 1;
                    }
                    i += 1;
                }
            }
            b'"' => {
                let start = line;
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    if bytes[i] == b'\n' {
                        line += 1;
                    }
                    i += 1;
                }
                if i >= bytes.len() {
                    return err(start, "unterminated string");
                }
                i += 1;
                out.push(Token {
                    tok: Tok::Str,
                    line: start,
                });
            }
            c if c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'$' | b'%') => {
                let s = i;
                while i < bytes.len()
                    && (bytes[i].is_ascii_alphanumeric()
                        || matches!(bytes[i], b'_' | b'.' | b'$' | b'%'))
                {
                    i += 1;
                }
                out.push(Token {
                    tok: Tok::Word(&src[s..i]),
                    line,
                });
            }
            b'[' | b']' | b'{' | b'}' | b'(' | b')' | b',' | b';' | b':' | b'+' | b'-' | b'<'
            | b'>' | b'@' | b'!' | b'|' | b'=' => {
                out.push(Token {
                    tok: Tok::Punct(c as char),
                    line,
                });
                i += 1;
            }
            _ => {
                return err(
                    line,
                    format!(
                        "unexpected character {:?}",
                        src[i..].chars().next().unwrap_or('?')
                    ),
                );
            }
        }
    }
    Ok(out)
}

/// A numeric literal.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Imm {
    /// An integer literal (decimal, hex, octal or binary), as 64 bits.
    Int(i64),
    /// `0fXXXXXXXX`: an `f32` given by its bits.
    F32(u32),
    /// `0dXXXXXXXXXXXXXXXX`: an `f64` given by its bits.
    F64(u64),
    /// A decimal floating-point literal such as `1.5` (PTX treats it as f64).
    Float(f64),
}

/// The base of an address operand `[base+offset]`.
#[derive(Clone, Debug, PartialEq)]
pub enum AddrBase {
    /// A register (`[%rd4+8]`).
    Reg(String),
    /// A variable or parameter name (`[nbody_drift_param_4]`).
    Symbol(String),
    /// An absolute address (`[0x1000]`).
    Abs(i64),
}

/// One instruction operand.
#[derive(Clone, Debug, PartialEq)]
pub enum Operand {
    /// A register or special register (`%r5`, `%tid.x`), or a symbol name
    /// (variable, label); decode tells them apart.
    Name(String),
    /// `!%p`: a negated predicate.
    Not(String),
    /// A literal.
    Imm(Imm),
    /// `[base+offset]`.
    Addr(AddrBase, i64),
    /// `{a, b, c, d}`: a vector of operands.
    Vector(Vec<Operand>),
    /// `%p|%q`: the two predicate destinations of `setp`.
    Pair(String, String),
    /// `_`: a sink destination.
    Sink,
}

/// An instruction with its guard predicate.
#[derive(Clone, Debug, PartialEq)]
pub struct Instruction {
    /// `@%p` or `@!%p`: `(negated, register)`.
    pub guard: Option<(bool, String)>,
    /// The opcode with all modifiers, e.g. `ld.global.v4.b32`.
    pub opcode: String,
    /// Operands in order.
    pub operands: Vec<Operand>,
}

/// A statement of an entry's body.
#[derive(Clone, Debug, PartialEq)]
pub enum Body {
    /// `name:`
    Label(String),
    /// An instruction.
    Inst(Instruction),
    /// `.reg .type names;` (`%r<22>` declares `%r0`..`%r21`).
    Reg {
        /// The type without the dot (`b32`, `pred`, ...).
        ty: String,
        /// `(name, Some(count))` for `%r<count>`, `(name, None)` for a plain name.
        names: Vec<(String, Option<u32>)>,
    },
    /// A `.local` or `.shared` variable declared inside the body.
    Var(Variable),
    /// `{`: a nested register scope (inline assembly blocks use them).
    Open,
    /// `}`
    Close,
}

/// A `.param` of an entry point.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Param {
    /// The parameter's name.
    pub name: String,
    /// Its type without the dot (`u64`, `u32`, `f32`, `b8`, ...).
    pub ty: String,
    /// `.align`, if given.
    pub align: Option<u32>,
    /// Array length for `.b8 name[16]`-style parameters.
    pub array: Option<u32>,
}

/// The state space of a variable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Space {
    /// `.shared`
    Shared,
    /// `.global`
    Global,
    /// `.local`
    Local,
    /// `.const`
    Const,
}

/// A variable declaration (`.shared .align 16 .b8 buf[1024];`).
#[derive(Clone, Debug, PartialEq)]
pub struct Variable {
    /// Where it lives.
    pub space: Space,
    /// `.extern` (dynamic shared memory when `array` is `Some(0)` or absent size).
    pub external: bool,
    /// Its name.
    pub name: String,
    /// Element type without the dot.
    pub ty: String,
    /// `.align`, if given.
    pub align: Option<u32>,
    /// `None` for a scalar, `Some(0)` for `name[]`, `Some(n)` for `name[n]`.
    pub array: Option<u32>,
    /// Whether an initializer (`= {...}`) followed; only zero-initialised
    /// variables are supported, so decode rejects these.
    pub initialized: bool,
    /// Declaration line.
    pub line: u32,
}

/// An entry point (`.entry`), or a device function (`.func`), parsed.
#[derive(Clone, Debug, PartialEq)]
pub struct Function {
    /// Its name.
    pub name: String,
    /// `.entry` (a kernel) rather than `.func`.
    pub is_entry: bool,
    /// Parameters in order.
    pub params: Vec<Param>,
    /// Body statements with their lines; empty for a declaration.
    pub body: Vec<(u32, Body)>,
    /// Line of the `.entry`/`.func` keyword.
    pub line: u32,
    /// `.maxntid`/`.reqntid`, if given (x*y*z).
    pub max_threads: Option<u32>,
    /// `.maxntid x, y, z` (missing dimensions 1): an upper bound on the
    /// block's threads (their product; the driver checks the product).
    pub maxntid: Option<[u32; 3]>,
    /// `.reqntid x, y, z`: the exact block shape every launch must have.
    pub reqntid: Option<[u32; 3]>,
    /// `.maxnreg n`: registers per thread the JIT may use at most.
    pub maxnreg: Option<u32>,
    /// FNV-1a 64 of the function's tokens (whitespace and comments aside):
    /// identifies the code a measured register count belongs to.
    pub fingerprint: u64,
}

/// A parsed PTX module.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Module {
    /// `.version`, e.g. `(7, 0)`.
    pub version: Option<(u32, u32)>,
    /// `.target`, e.g. `sm_70`.
    pub target: Option<String>,
    /// `.address_size`.
    pub address_size: Option<u32>,
    /// Module-scope variables.
    pub variables: Vec<Variable>,
    /// Entries and functions in order.
    pub functions: Vec<Function>,
}

struct Parser<'a> {
    toks: Vec<Token<'a>>,
    pos: usize,
}

impl<'a> Parser<'a> {
    fn line(&self) -> u32 {
        self.toks
            .get(self.pos)
            .or_else(|| self.toks.last())
            .map_or(1, |t| t.line)
    }

    fn peek(&self) -> Option<&Tok<'a>> {
        self.toks.get(self.pos).map(|t| &t.tok)
    }

    fn peek_at(&self, k: usize) -> Option<&Tok<'a>> {
        self.toks.get(self.pos + k).map(|t| &t.tok)
    }

    fn next(&mut self) -> Result<Tok<'a>> {
        match self.toks.get(self.pos) {
            Some(t) => {
                self.pos += 1;
                Ok(t.tok.clone())
            }
            None => err(self.line(), "unexpected end of PTX"),
        }
    }

    fn is_punct(&self, c: char) -> bool {
        self.peek() == Some(&Tok::Punct(c))
    }

    fn eat_punct(&mut self, c: char) -> bool {
        if self.is_punct(c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn expect_punct(&mut self, c: char) -> Result<()> {
        if self.eat_punct(c) {
            Ok(())
        } else {
            err(
                self.line(),
                format!("expected '{c}', found {:?}", self.peek()),
            )
        }
    }

    fn word(&mut self) -> Result<&'a str> {
        match self.next()? {
            Tok::Word(w) => Ok(w),
            t => err(self.line(), format!("expected a name, found {t:?}")),
        }
    }

    fn number(&mut self) -> Result<u32> {
        let line = self.line();
        let w = self.word()?;
        parse_int(w)
            .and_then(|v| u32::try_from(v).ok())
            .map_or_else(|| err(line, format!("expected a number, found {w}")), Ok)
    }

    /// Skips tokens up to and including the next `;` at brace depth 0.
    fn skip_statement(&mut self) -> Result<()> {
        let mut depth = 0i32;
        loop {
            match self.next()? {
                Tok::Punct('{') => depth += 1,
                Tok::Punct('}') => depth -= 1,
                Tok::Punct(';') if depth <= 0 => return Ok(()),
                _ => {}
            }
        }
    }

    /// Skips a balanced `{ ... }` block (the opening brace is next).
    fn skip_block(&mut self) -> Result<()> {
        self.expect_punct('{')?;
        let mut depth = 1;
        while depth > 0 {
            match self.next()? {
                Tok::Punct('{') => depth += 1,
                Tok::Punct('}') => depth -= 1,
                _ => {}
            }
        }
        Ok(())
    }

    fn module(&mut self) -> Result<Module> {
        let mut m = Module::default();
        while let Some(tok) = self.peek().cloned() {
            let line = self.line();
            match tok {
                Tok::Word(".version") => {
                    self.pos += 1;
                    let w = self.word()?;
                    let (a, b) = w.split_once('.').unwrap_or((w, "0"));
                    match (a.parse(), b.parse()) {
                        (Ok(a), Ok(b)) => m.version = Some((a, b)),
                        _ => return err(line, format!("bad .version {w}")),
                    }
                }
                Tok::Word(".target") => {
                    self.pos += 1;
                    m.target = Some(self.word()?.to_owned());
                    while self.eat_punct(',') {
                        self.word()?;
                    }
                }
                Tok::Word(".address_size") => {
                    self.pos += 1;
                    m.address_size = Some(self.number()?);
                }
                Tok::Word(".file") | Tok::Word(".pragma") => self.skip_line_directive(line)?,
                Tok::Word(".section") => {
                    self.pos += 1;
                    self.word()?;
                    self.skip_block()?;
                }
                Tok::Word(".visible")
                | Tok::Word(".weak")
                | Tok::Word(".extern")
                | Tok::Word(".entry")
                | Tok::Word(".func")
                | Tok::Word(".shared")
                | Tok::Word(".global")
                | Tok::Word(".const")
                | Tok::Word(".local") => {
                    // Linkage prefixes, then a variable or a function.
                    let mut external = false;
                    while let Some(Tok::Word(w)) = self.peek() {
                        match *w {
                            ".visible" | ".weak" | ".common" => self.pos += 1,
                            ".extern" => {
                                external = true;
                                self.pos += 1
                            }
                            _ => break,
                        }
                    }
                    match self.peek() {
                        Some(Tok::Word(".entry")) | Some(Tok::Word(".func")) => {
                            let f = self.function()?;
                            m.functions.push(f);
                        }
                        _ => {
                            let v = self.variable(external)?;
                            m.variables.push(v);
                        }
                    }
                }
                Tok::Word(w) => return err(line, format!("unexpected directive {w}")),
                t => return err(line, format!("unexpected {t:?}")),
            }
        }
        Ok(m)
    }

    fn skip_line_directive(&mut self, line: u32) -> Result<()> {
        // `.file 1 "name"` has no terminator: skip tokens on this line.
        while self.pos < self.toks.len() && self.toks[self.pos].line == line {
            self.pos += 1;
        }
        Ok(())
    }

    /// `.shared .align 16 .b8 name[N] (= {...})? ;` with the space next.
    fn variable(&mut self, external: bool) -> Result<Variable> {
        let line = self.line();
        let space = match self.word()? {
            ".shared" => Space::Shared,
            ".global" => Space::Global,
            ".local" => Space::Local,
            ".const" => Space::Const,
            w => return err(line, format!("expected a state space, found {w}")),
        };
        let mut align = None;
        let mut ty = None;
        loop {
            match self.peek() {
                Some(Tok::Word(".align")) => {
                    self.pos += 1;
                    align = Some(self.number()?);
                }
                Some(Tok::Word(w)) if w.starts_with('.') => {
                    // `.v4 .f32` and similar: keep the last (scalar) type.
                    let w = *w;
                    self.pos += 1;
                    if !w.starts_with(".v") {
                        ty = Some(w[1..].to_owned());
                    }
                }
                _ => break,
            }
        }
        let name = self.word()?.to_owned();
        let mut array = None;
        if self.eat_punct('[') {
            if self.eat_punct(']') {
                array = Some(0);
            } else {
                array = Some(self.number()?);
                self.expect_punct(']')?;
            }
        }
        let mut initialized = false;
        if self.eat_punct('=') {
            initialized = true;
            self.skip_statement()?;
        } else {
            self.expect_punct(';')?;
        }
        Ok(Variable {
            space,
            external,
            name,
            ty: ty.unwrap_or_else(|| "b8".to_owned()),
            align,
            array,
            initialized,
            line,
        })
    }

    fn function(&mut self) -> Result<Function> {
        let line = self.line();
        let start = self.pos;
        let is_entry = self.word()? == ".entry";
        // `.func (.param .b32 ret) name (params)`: a return list first.
        if !is_entry && self.is_punct('(') {
            self.param_list()?;
        }
        let name = self.word()?.to_owned();
        let params = if self.is_punct('(') {
            self.param_list()?
        } else {
            Vec::new()
        };
        let mut max_threads = None;
        let (mut maxntid, mut reqntid, mut maxnreg) = (None, None, None);
        // Performance directives: `.maxntid 256, 1, 1`, `.reqntid`, `.minnctapersm 2`, `.noreturn`...
        while let Some(Tok::Word(w)) = self.peek() {
            let w = *w;
            if !w.starts_with('.') {
                break;
            }
            self.pos += 1;
            let mut dims = Vec::new();
            while let Some(Tok::Word(v)) = self.peek() {
                if v.starts_with('.') {
                    break;
                }
                dims.push(self.number()?);
                if !self.eat_punct(',') {
                    break;
                }
            }
            if matches!(w, ".maxntid" | ".reqntid") {
                if dims.is_empty() || dims.len() > 3 || dims.contains(&0) {
                    return err(line, format!("{w} needs one to three positive extents"));
                }
                let mut d = [1u32; 3];
                d[..dims.len()].copy_from_slice(&dims);
                max_threads = Some(dims.iter().product());
                if w == ".maxntid" {
                    maxntid = Some(d);
                } else {
                    reqntid = Some(d);
                }
            }
            if w == ".maxnreg" {
                maxnreg = dims.first().copied();
            }
        }
        let mut body = Vec::new();
        if self.eat_punct(';') {
            // A declaration without a body.
        } else {
            self.expect_punct('{')?;
            let mut depth = 1;
            loop {
                let line = self.line();
                match self.peek() {
                    None => return err(line, format!("unterminated body of {name}")),
                    Some(Tok::Punct('}')) => {
                        self.pos += 1;
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                        body.push((line, Body::Close));
                    }
                    Some(Tok::Punct('{')) => {
                        self.pos += 1;
                        depth += 1;
                        body.push((line, Body::Open));
                    }
                    _ => {
                        if let Some(stmt) = self.body_statement()? {
                            body.push((line, stmt));
                        }
                    }
                }
            }
        }
        Ok(Function {
            name,
            is_entry,
            params,
            body,
            line,
            max_threads,
            maxntid,
            reqntid,
            maxnreg,
            fingerprint: fingerprint(&self.toks[start..self.pos]),
        })
    }

    fn param_list(&mut self) -> Result<Vec<Param>> {
        self.expect_punct('(')?;
        let mut params = Vec::new();
        if self.eat_punct(')') {
            return Ok(params);
        }
        loop {
            let line = self.line();
            let first = self.word()?;
            if first != ".param" && first != ".reg" {
                return err(line, format!("expected .param, found {first}"));
            }
            let mut ty = None;
            let mut align = None;
            let mut ptr = false;
            loop {
                match self.peek() {
                    Some(Tok::Word(".align")) => {
                        self.pos += 1;
                        let a = self.number()?;
                        // After `.ptr`, `.align` is the pointee's alignment.
                        if !ptr {
                            align = Some(a);
                        }
                    }
                    Some(Tok::Word(".ptr")) => {
                        self.pos += 1;
                        ptr = true;
                    }
                    Some(Tok::Word(w)) if w.starts_with('.') => {
                        let w = *w;
                        self.pos += 1;
                        // State-space annotations of `.ptr` (`.global`), not types.
                        if !matches!(w, ".global" | ".shared" | ".local" | ".const") {
                            ty = Some(w[1..].to_owned());
                        }
                    }
                    _ => break,
                }
            }
            let name = self.word()?.to_owned();
            let mut array = None;
            if self.eat_punct('[') {
                array = Some(self.number()?);
                self.expect_punct(']')?;
            }
            let Some(ty) = ty else {
                return err(line, format!("parameter {name} has no type"));
            };
            params.push(Param {
                name,
                ty,
                align,
                array,
            });
            if self.eat_punct(')') {
                return Ok(params);
            }
            self.expect_punct(',')?;
        }
    }

    fn body_statement(&mut self) -> Result<Option<Body>> {
        let line = self.line();
        // A label: `name:`
        if let (Some(Tok::Word(w)), Some(Tok::Punct(':'))) = (self.peek(), self.peek_at(1)) {
            let w = (*w).to_owned();
            self.pos += 2;
            return Ok(Some(Body::Label(w)));
        }
        match self.peek() {
            Some(Tok::Word(".reg")) => {
                self.pos += 1;
                let mut ty = None;
                while let Some(Tok::Word(w)) = self.peek() {
                    if !w.starts_with('.') {
                        break;
                    }
                    let w = *w;
                    self.pos += 1;
                    if !w.starts_with(".v") {
                        ty = Some(w[1..].to_owned());
                    }
                }
                let Some(ty) = ty else {
                    return err(line, ".reg without a type");
                };
                let mut names = Vec::new();
                loop {
                    let name = self.word()?.to_owned();
                    let count = if self.eat_punct('<') {
                        let n = self.number()?;
                        self.expect_punct('>')?;
                        Some(n)
                    } else {
                        None
                    };
                    names.push((name, count));
                    if !self.eat_punct(',') {
                        break;
                    }
                }
                self.expect_punct(';')?;
                Ok(Some(Body::Reg { ty, names }))
            }
            Some(Tok::Word(".local")) | Some(Tok::Word(".shared")) => {
                Ok(Some(Body::Var(self.variable(false)?)))
            }
            Some(Tok::Word(".loc")) | Some(Tok::Word(".file")) => {
                self.skip_line_directive(line)?;
                Ok(None)
            }
            Some(Tok::Word(".pragma")) => {
                self.skip_statement()?;
                Ok(None)
            }
            _ => Ok(Some(Body::Inst(self.instruction()?))),
        }
    }

    fn instruction(&mut self) -> Result<Instruction> {
        let line = self.line();
        let mut guard = None;
        if self.eat_punct('@') {
            let neg = self.eat_punct('!');
            guard = Some((neg, self.word()?.to_owned()));
        }
        let opcode = self.word()?;
        if opcode.starts_with('.') || opcode.starts_with('%') {
            return err(line, format!("expected an instruction, found {opcode}"));
        }
        let mut operands = Vec::new();
        if !self.eat_punct(';') {
            loop {
                operands.push(self.operand()?);
                if self.eat_punct(';') {
                    break;
                }
                if !self.eat_punct(',') {
                    return err(
                        self.line(),
                        format!("expected ',' or ';' in {opcode}, found {:?}", self.peek()),
                    );
                }
            }
        }
        Ok(Instruction {
            guard,
            opcode: opcode.to_owned(),
            operands,
        })
    }

    fn operand(&mut self) -> Result<Operand> {
        let line = self.line();
        if self.eat_punct('[') {
            let base;
            let mut offset = 0i64;
            match self.next()? {
                Tok::Word(w) => {
                    if let Some(v) = parse_int(w) {
                        base = AddrBase::Abs(v);
                    } else if w.starts_with('%') {
                        base = AddrBase::Reg(w.to_owned());
                    } else {
                        base = AddrBase::Symbol(w.to_owned());
                    }
                }
                Tok::Punct('-') => {
                    let w = self.word()?;
                    let v = parse_int(w).ok_or_else(|| ParseError {
                        line,
                        message: format!("bad address {w}"),
                    })?;
                    base = AddrBase::Abs(-v);
                }
                t => return err(line, format!("bad address operand {t:?}")),
            }
            while !self.eat_punct(']') {
                let sign = match self.next()? {
                    Tok::Punct('+') => 1,
                    Tok::Punct('-') => -1,
                    t => return err(line, format!("bad address operand {t:?}")),
                };
                let sign = if self.eat_punct('-') { -sign } else { sign };
                let w = self.word()?;
                let v = parse_int(w).ok_or_else(|| ParseError {
                    line,
                    message: format!("bad address offset {w}"),
                })?;
                offset = offset.wrapping_add(sign * v);
            }
            return Ok(Operand::Addr(base, offset));
        }
        // `{a, b}` vectors; `(a, b)` argument lists of `call`.
        for (open, close) in [('{', '}'), ('(', ')')] {
            if self.eat_punct(open) {
                let mut items = Vec::new();
                if self.eat_punct(close) {
                    return Ok(Operand::Vector(items));
                }
                loop {
                    items.push(self.operand()?);
                    if self.eat_punct(close) {
                        break;
                    }
                    self.expect_punct(',')?;
                }
                return Ok(Operand::Vector(items));
            }
        }
        if self.eat_punct('!') {
            return Ok(Operand::Not(self.word()?.to_owned()));
        }
        if self.eat_punct('-') {
            let w = self.word()?;
            return match parse_imm(w) {
                Some(Imm::Int(v)) => Ok(Operand::Imm(Imm::Int(v.wrapping_neg()))),
                Some(Imm::Float(v)) => Ok(Operand::Imm(Imm::Float(-v))),
                Some(Imm::F32(b)) => Ok(Operand::Imm(Imm::F32(b ^ 0x8000_0000))),
                Some(Imm::F64(b)) => Ok(Operand::Imm(Imm::F64(b ^ (1 << 63)))),
                None => err(line, format!("bad literal -{w}")),
            };
        }
        let w = self.word()?;
        if w == "_" {
            return Ok(Operand::Sink);
        }
        if let Some(imm) = parse_imm(w) {
            return Ok(Operand::Imm(imm));
        }
        if self.eat_punct('|') {
            let second = self.word()?;
            return Ok(Operand::Pair(w.to_owned(), second.to_owned()));
        }
        // `sym+8` as a non-bracketed operand (mov of an address plus offset).
        if self.is_punct('+')
            && let Some(Tok::Word(n)) = self.peek_at(1)
            && let Some(v) = parse_int(n)
        {
            self.pos += 2;
            return Ok(Operand::Addr(AddrBase::Symbol(w.to_owned()), v));
        }
        Ok(Operand::Name(w.to_owned()))
    }
}

/// Parses an integer literal: decimal, `0x` hex, `0b` binary, leading-0 octal,
/// with an optional `U` suffix.
pub fn parse_int(w: &str) -> Option<i64> {
    let w = w.strip_suffix('U').unwrap_or(w);
    let (digits, radix) = if let Some(h) = w.strip_prefix("0x").or_else(|| w.strip_prefix("0X")) {
        (h, 16)
    } else if let Some(b) = w.strip_prefix("0b").or_else(|| w.strip_prefix("0B")) {
        (b, 2)
    } else if w.len() > 1 && w.starts_with('0') && w.bytes().all(|c| c.is_ascii_digit()) {
        (&w[1..], 8)
    } else {
        (w, 10)
    };
    if digits.is_empty() {
        return None;
    }
    u64::from_str_radix(digits, radix).ok().map(|v| v as i64)
}

fn parse_imm(w: &str) -> Option<Imm> {
    if !w.as_bytes()[0].is_ascii_digit() {
        return None;
    }
    if let Some(h) = w.strip_prefix("0f").or_else(|| w.strip_prefix("0F"))
        && h.len() == 8
    {
        return u32::from_str_radix(h, 16).ok().map(Imm::F32);
    }
    if let Some(h) = w.strip_prefix("0d").or_else(|| w.strip_prefix("0D"))
        && h.len() == 16
    {
        return u64::from_str_radix(h, 16).ok().map(Imm::F64);
    }
    if let Some(v) = parse_int(w) {
        return Some(Imm::Int(v));
    }
    if w.contains('.') || w.contains('e') || w.contains('E') {
        return w.parse::<f64>().ok().map(Imm::Float);
    }
    None
}

/// Parses PTX text.
pub fn parse(src: &str) -> Result<Module> {
    let toks = lex(src)?;
    Parser { toks, pos: 0 }.module()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fingerprint (what the measured register counts are keyed by)
    /// is the same wherever the entry sits in the module, and changes
    /// with its code.
    #[test]
    fn the_fingerprint_ignores_the_functions_index_in_labels_only() {
        let entry = |label: &str, depot: &str, op: &str| {
            format!(
                ".version 7.0\n.target sm_70\n.address_size 64\n.visible .entry k(\n\t.param .u32 p\n)\n{{\n\t\
                 .local .align 4 .b8 {depot}[8];\n\t.reg .pred %p<2>;\n\t.reg .b32 %r<3>;\n\t\
                 @%p1 bra {label};\n\t{op}.s32 %r1, %r1, 1;\n{label}:\n\tret;\n}}\n"
            )
        };
        let print = |src: String| parse(&src).unwrap().functions[0].fingerprint;
        let base = print(entry("$L__BB3_2", "__local_depot3", "add"));
        assert_eq!(base, print(entry("$L__BB31_2", "__local_depot31", "add")));
        assert_ne!(base, print(entry("$L__BB3_3", "__local_depot3", "add")));
        assert_ne!(base, print(entry("$L__BB3_2", "__local_depot3", "sub")));
        assert_eq!(position_free("$L__BB12_7"), "$L__BB_7");
        assert_eq!(position_free("$L__BBx_7"), "$L__BBx_7");
        assert_eq!(position_free("__local_depot"), "__local_depot");
    }

    #[test]
    fn parses_an_entry_with_params_regs_labels_and_operands() {
        let src = r#"
.version 7.0
.target sm_70
.address_size 64
.extern .shared .align 16 .b8 smem[];
.visible .entry k(
	.param .u64 .ptr .align 1 k_param_0,
	.param .f32 k_param_1
)
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<5>;
	.reg .b64 	%rd<3>;
	ld.param.b64 	%rd1, [k_param_0];
	@%p1 bra 	$L__BB0_2;
	st.global.v4.b32 	[%rd1+-16], {%r1, %r2, %r3, 0f00000000};
	{ .reg .u64 %gp; cvta.to.global.u64 %gp, %rd1; red.global.add.f32 [%gp], %r1; }
	setp.lt.and.u32 %p0|%p1, %r1, -1, !%p1;
$L__BB0_2:
	ret;
}
"#;
        let m = parse(src).unwrap();
        assert_eq!(m.version, Some((7, 0)));
        assert_eq!(m.variables[0].name, "smem");
        assert_eq!(m.variables[0].array, Some(0));
        let f = &m.functions[0];
        assert_eq!(f.params.len(), 2);
        assert_eq!(f.params[0].ty, "u64");
        assert_eq!(f.params[1].ty, "f32");
        let insts: Vec<_> = f
            .body
            .iter()
            .filter_map(|(l, b)| match b {
                Body::Inst(i) => Some((*l, i.clone())),
                _ => None,
            })
            .collect();
        assert_eq!(insts[0].1.opcode, "ld.param.b64");
        assert_eq!(
            insts[0].1.operands[1],
            Operand::Addr(AddrBase::Symbol("k_param_0".into()), 0)
        );
        assert_eq!(insts[1].1.guard, Some((false, "%p1".into())));
        assert_eq!(
            insts[2].1.operands[0],
            Operand::Addr(AddrBase::Reg("%rd1".into()), -16)
        );
        assert_eq!(
            insts[2].1.operands[1],
            Operand::Vector(vec![
                Operand::Name("%r1".into()),
                Operand::Name("%r2".into()),
                Operand::Name("%r3".into()),
                Operand::Imm(Imm::F32(0)),
            ])
        );
        assert_eq!(
            insts[5].1.operands[0],
            Operand::Pair("%p0".into(), "%p1".into())
        );
        assert_eq!(insts[5].1.operands[2], Operand::Imm(Imm::Int(-1)));
        assert_eq!(insts[5].1.operands[3], Operand::Not("%p1".into()));
        assert_eq!(insts[2].0, 16);
        assert!(f.body.contains(&(17, Body::Open)));
    }

    #[test]
    fn reports_the_line_of_a_syntax_error() {
        let e =
            parse(".version 7.0\n.target sm_70\n.visible .entry k()\n{\n add.s32 %r1 %r2;\n}\n")
                .unwrap_err();
        assert_eq!(e.line, 5, "{e}");
    }

    #[test]
    fn literals() {
        assert_eq!(parse_imm("0f7F800000"), Some(Imm::F32(0x7F80_0000)));
        assert_eq!(
            parse_imm("0d3FE0000000000000"),
            Some(Imm::F64(0x3FE0_0000_0000_0000))
        );
        assert_eq!(parse_imm("0x10"), Some(Imm::Int(16)));
        assert_eq!(parse_imm("017"), Some(Imm::Int(15)));
        assert_eq!(parse_imm("1.5"), Some(Imm::Float(1.5)));
        assert_eq!(parse_imm("4294967295U"), Some(Imm::Int(4294967295)));
    }
}
