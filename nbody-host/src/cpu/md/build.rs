//! Building the neighbour lists: bodies binned into cells by a counting
//! sort, reordered by cell, and Verlet lists built per task of cells.
//!
//! 1. **Keys**: each body's cell ([`Grid::cell_of`]).
//! 2. **Counting sort**: bodies counted per cell, an exclusive prefix scan
//!    gives each cell's start, and the bodies are placed cell by cell in the
//!    order of their user index (a stable sort keyed on `(cell, index)`: the
//!    order depends on the positions only, not on the order before).
//! 3. The engine moves every per-body array into that order (locality: a
//!    cell's bodies are contiguous, and so are a row's and a layer's).
//! 4. **Lists**, built per *task*, a fixed group of cells (never a function
//!    of the thread count), each body's list padded to a whole number of
//!    vectors with its own index, which the loops mask:
//!    - *half lists* (Newton's third law): a task is a z-layer of cells. For
//!      each body `i`, the bodies `j > i` of its own cell and every body of
//!      the cells of its forward half stencil ([`Grid::stencil_into`])
//!      within `r_list = r_c + skin` (minimum image), each pair once, as
//!      indices into the task's *window*: its own bodies followed by those
//!      of the next layer, which its stencil reaches. In a periodic box with
//!      three or more layers, the last layer's next is layer 0, whose bodies
//!      are appended after the last body as ghost copies (positions only),
//!      so that every window is one contiguous range;
//!    - *full lists*: a task is a row of cells along x. For each body, every
//!      other body of its cell and its 26 neighbours within `r_list`, as
//!      slots.
//!
//! Tasks are built in parallel, each in a fixed order: the lists depend on
//! the positions only.

use rayon::prelude::*;

use super::loops::{List, MdLoops, Pos, Run};
use super::rows::Setup;
use crate::error::{Error, Result};
use crate::md::cells::Grid;

/// The relative margin on `r_list^2` when listing pairs, so that `f32`
/// rounding of `r^2` never drops a pair within `r_list` (see `crate::md::cells`).
const LIST_MARGIN: f32 = 1e-5;

/// One task: a group of cells and the lists of their bodies.
#[derive(Clone, Debug, Default)]
pub(crate) struct Task {
    /// Slot of the task's first body (a half list's window starts there).
    pub first: usize,
    /// Bodies in the task (the i-bodies of its lists).
    pub len: usize,
    /// Half lists: bodies in the window, the task's then the next layer's.
    pub window: usize,
    /// Half lists: the task whose bodies follow in the window, if any.
    pub next: Option<usize>,
    /// `len + 1` offsets into `j`.
    pub offsets: Vec<u32>,
    /// Window indices (half lists) or slots (full lists), a whole number
    /// of vectors per body.
    pub j: Vec<u32>,
}

impl Task {
    /// The task's lists for the loops (half lists index the window, which
    /// starts at the task: the caller sets `first` to 0 there).
    pub fn list(&self) -> List<'_> {
        List {
            first: self.first,
            offsets: &self.offsets,
            j: &self.j,
        }
    }
}

/// The lists of one build.
#[derive(Clone, Debug)]
pub(crate) struct Lists {
    /// The grid the bodies were binned on.
    pub grid: Grid,
    /// Z-layers (half lists) or rows (full lists), in slot order.
    pub tasks: Vec<Task>,
    /// Bodies of layer 0 copied after the last body (0 without a wrap).
    pub ghosts: usize,
    /// List entries (without the padding): pairs, or twice the pairs for
    /// full lists.
    pub pairs: usize,
    /// Half lists (each pair once) or full lists.
    pub half: bool,
}

/// The order of a build: `order[new] = old` slot, and where each cell
/// starts; kept by the engine from build to build, so that a rebuild
/// refills these vectors within their capacity instead of allocating (and
/// the kernel zeroing) fresh pages each time.
#[derive(Debug, Default)]
pub(crate) struct Order {
    /// The new order of the slots.
    pub order: Vec<u32>,
    /// `cells + 1` starts, in the new order.
    pub cell_start: Vec<usize>,
    /// Each slot's cell.
    keys: Vec<u32>,
    /// Where the next body of each cell goes.
    next: Vec<usize>,
}

/// Bins the bodies (slots `0..n` of `x, y, z`; `by_user[u]` is the slot of
/// user index `u`) and sorts them by `(cell, user index)` into `out`.
pub(crate) fn sort(grid: &Grid, x: &[f32], y: &[f32], z: &[f32], by_user: &[u32], out: &mut Order) {
    let n = by_user.len();
    let Order {
        order,
        cell_start,
        keys,
        next,
    } = out;
    keys.clear();
    keys.resize(n, 0);
    keys.par_iter_mut()
        .enumerate()
        .with_min_len(4096)
        .for_each(|(s, k)| *k = grid.cell_of([x[s], y[s], z[s]]) as u32);
    cell_start.clear();
    cell_start.resize(grid.len() + 1, 0);
    for &k in keys.iter() {
        cell_start[k as usize + 1] += 1;
    }
    for c in 0..grid.len() {
        cell_start[c + 1] += cell_start[c];
    }
    next.clear();
    next.extend_from_slice(cell_start);
    order.clear();
    order.resize(n, 0);
    for &slot in by_user {
        let c = keys[slot as usize] as usize;
        order[next[c]] = slot;
        next[c] += 1;
    }
}

/// The lists of bodies already in cell order (`pos` holds the `n` bodies
/// then at least `lanes - 1` more values), for pairs within `r_list`:
/// half lists or, if `!half`, full lists (see the module documentation).
/// The vectors of `recycle` (the previous build's tasks) are reused, so a
/// rebuild allocates, and faults in, no fresh memory for the lists. Room
/// for each cell's lists (its bodies times the candidates of its stencil,
/// plus padding) is reserved fallibly before the cell is listed, so a list
/// that outgrows the memory is an [`Error::HostMemoryExceeded`], never an
/// allocation abort.
#[allow(
    clippy::too_many_arguments,
    reason = "one call site, in the engine's rebuild"
)]
pub(crate) fn lists(
    grid: Grid,
    cell_start: &[usize],
    pos: Pos<'_>,
    n: usize,
    r_list: f32,
    half: bool,
    loops: &MdLoops,
    c: &Setup,
    recycle: Vec<Task>,
) -> Result<Lists> {
    // With 3 or more cells along every periodic axis, a neighbouring
    // cell's bodies all lie near the same image (the box wrapped or not):
    // no rounding per candidate. With fewer, the minimum image per pair.
    let fixed_images = !grid.periodic || grid.dims.iter().all(|&d| d >= 3);
    // Cells per task: a z-layer (half lists) or a row along x (full lists).
    let per_task = if half { grid.layer_len() } else { grid.dims[0] };
    let count = grid.len() / per_task;
    let span = |t: usize| (cell_start[t * per_task], cell_start[(t + 1) * per_task]);
    let wraps = half && (0..count).any(|l| grid.next_layer(l).is_some_and(|m| m < l));
    let ghosts = if wraps { span(0).1 - span(0).0 } else { 0 };
    let r2_list = r_list * r_list * (1.0 + LIST_MARGIN);
    let mut spare: Vec<(Vec<u32>, Vec<u32>)> =
        recycle.into_iter().map(|t| (t.offsets, t.j)).collect();
    spare.resize_with(count, Default::default);
    let tasks: Vec<Task> = spare
        .into_par_iter()
        .enumerate()
        .map(|(t, (mut offsets, mut j))| {
            let (first, end) = span(t);
            let next = if half { grid.next_layer(t) } else { None };
            let next_len = next.map_or(0, |m| span(m).1 - span(m).0);
            offsets.clear();
            reserve(&mut offsets, end - first + 1, n)?;
            j.clear();
            reserve(&mut j, (end - first) * if half { 48 } else { 96 }, n)?;
            let mut task = Task {
                first,
                len: end - first,
                window: end - first + next_len,
                next,
                offsets,
                j,
            };
            task.offsets.push(0);
            // Window index of slot j (half lists): the layer's own and the
            // next layer's bodies follow each other, except across the wrap,
            // where the next layer (layer 0) sits after the last body as
            // ghosts. Full lists keep the slot.
            let shift = |j: usize| -> u32 {
                match (half, j >= first) {
                    (false, _) => 0,
                    (true, true) => first.wrapping_neg() as u32,
                    (true, false) => n.wrapping_sub(first) as u32,
                }
            };
            // Buffers reused from cell to cell (allocations per cell cost
            // more than a short-range cell's lists).
            let mut runs = Vec::with_capacity(27);
            let mut cell_runs = Vec::with_capacity(27);
            // The cell's coordinates, stepped along (no division per cell).
            let mut here = grid.coords(t * per_task);
            for cell in t * per_task..(t + 1) * per_task {
                let (lo, hi) = (cell_start[cell], cell_start[cell + 1]);
                grid.stencil_runs_into(here, half, &mut cell_runs);
                here = grid.step_coords(here);
                runs.clear();
                runs.extend(cell_runs.iter().map(|&(a, b, wrap)| {
                    let start = cell_start[a];
                    // Across a face the neighbour cell's bodies are a box
                    // length away: x_j + L (or - L) is the near image.
                    let image = [0, 1, 2].map(|k| match wrap[k] {
                        -1 => -c.lengths[k],
                        1 => c.lengths[k],
                        _ => 0.0,
                    });
                    Run {
                        start,
                        end: cell_start[b + 1],
                        shift: shift(start),
                        image: fixed_images.then_some(image),
                    }
                }));
                // Each body's list holds at most every candidate, padded
                // to whole vectors (and a vector's room to append into).
                let candidates: usize = runs.iter().map(|r| r.end - r.start).sum();
                let room = (hi - lo) * (candidates + loops.lanes) + 2 * loops.lanes;
                reserve(&mut task.j, room, n)?;
                reserve(&mut task.offsets, hi - lo, n)?;
                loops.cell_lists(
                    pos,
                    lo..hi,
                    &runs,
                    half,
                    shift(lo),
                    shift(lo),
                    r2_list,
                    c,
                    &mut task.j,
                    &mut task.offsets,
                );
            }
            Ok(task)
        })
        .collect::<Result<Vec<Task>>>()?;
    let pairs = tasks
        .iter()
        .map(|task| {
            let me = |i: usize| if half { i } else { task.first + i } as u32;
            task.offsets
                .windows(2)
                .enumerate()
                .map(|(i, w)| {
                    task.j[w[0] as usize..w[1] as usize]
                        .iter()
                        .filter(|&&j| j != me(i))
                        .count()
                })
                .sum::<usize>()
        })
        .sum();
    Ok(Lists {
        grid,
        tasks,
        ghosts,
        pairs,
        half,
    })
}

/// Room for `more` entries in `list` (of a build of `n` bodies), or the
/// error naming the bytes when the memory does not have it.
fn reserve(list: &mut Vec<u32>, more: usize, n: usize) -> Result<()> {
    list.try_reserve(more)
        .map_err(|_| Error::HostMemoryExceeded {
            n,
            what: "the neighbour lists",
            needed: (list.len().saturating_add(more) as u64).saturating_mul(4),
            available: crate::memory::available_bytes().unwrap_or(0),
        })
}
