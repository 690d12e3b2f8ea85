// mbarrier_probe.cu: reverse-engineer sm_90's mbarrier word and arrive-token encoding from silicon.
//
// Build: nvcc -O2 -arch=sm_90 -o mbarrier_probe mbarrier_probe.cu
// Run:   ./mbarrier_probe GROUP OUT.json      GROUP = safe | ub | forge
//        ./mbarrier_probe --mock GROUP OUT.json  (no GPU: fills results from a CPU model, to test the host side)
//
// Each sequence is a list of steps (PTX mbarrier operations issued through inline asm by the lanes in the
// step's lane mask) run by one warp of its own CTA, on a fresh 8-byte slot of shared memory (slots 128 B
// apart). A sequence is run 2 + n times:
//   run 0  "trace":    after each step lane 0 reads the raw word with ld.shared, ld.volatile.shared, a
//                      generic ld.volatile, fence.proxy.async + ld, and ld after a 20 us nanosleep;
//   run 1  "atom":     after each step lane 0 reads the word with atom.shared.or.b64 0 (a CAS loop in SASS)
//                      and with two atom.shared.or.b32 0 (native ATOMS.OR);
//   run 2+k "snapshot": steps 0..=k only, then mbarrier.inval and ld.volatile (twice, the second after a
//                      nanosleep): the word as inval leaves it.
// Tokens, wait results and pending_count come from run 0 (every lane); runs 1 and 2+k record their own
// token of the step so that replays can be checked to agree.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cstdint>
#include <string>
#include <vector>
#ifndef __CUDACC__
#error "build with nvcc"
#endif
#include <cuda_runtime.h>

typedef unsigned long long u64;
typedef unsigned int u32;

#define MAXSTEPS 28
#define SLOT_BYTES 128
#define MAXSLOTS (2 + MAXSTEPS)
#define SNAP_SLEEP_NS 5000
#define LATE_SLEEP_NS 20000

enum Op {
  OP_NOP = 0,
  OP_INIT,          // mbarrier.init [a], arg
  OP_ARRIVE,        // mbarrier.arrive state, [a]
  OP_ARRIVE_CNT,    // mbarrier.arrive state, [a], arg
  OP_ARRIVE_NOC,    // mbarrier.arrive.noComplete state, [a], arg
  OP_DROP,          // mbarrier.arrive_drop state, [a]
  OP_DROP_CNT,      // mbarrier.arrive_drop state, [a], arg
  OP_DROP_NOC,      // mbarrier.arrive_drop.noComplete state, [a], arg
  OP_ARRIVE_TX,     // mbarrier.arrive.expect_tx state, [a], arg
  OP_DROP_TX,       // mbarrier.arrive_drop.expect_tx state, [a], arg
  OP_EXPECT_TX,     // mbarrier.expect_tx [a], arg
  OP_COMPLETE_TX,   // mbarrier.complete_tx [a], arg
  OP_TEST_TOK,      // mbarrier.test_wait p, [a], token of step arg
  OP_TRY_TOK,       // mbarrier.try_wait p, [a], token of step arg, arg64 (suspendTimeHint ns)
  OP_TEST_PAR,      // mbarrier.test_wait.parity p, [a], arg
  OP_TRY_PAR,       // mbarrier.try_wait.parity p, [a], arg, arg64 (suspendTimeHint ns)
  OP_TRY_PAR_NOHINT,// mbarrier.try_wait.parity p, [a], arg
  OP_TEST_RAW,      // mbarrier.test_wait p, [a], arg64 (a made-up token)
  OP_INVAL,         // mbarrier.inval [a]
  OP_STORE,         // st.volatile.shared.b64 [a], arg64 ; fence.proxy.async
  OP_XORSTORE,      // st.volatile.shared.b64 [a], (ld.volatile [a]) ^ arg64 ; fence.proxy.async
  OP_COUNT
};
static const char* OP_NAMES[OP_COUNT] = {
  "nop", "init", "arrive", "arrive_count", "arrive_noComplete", "arrive_drop", "arrive_drop_count",
  "arrive_drop_noComplete", "arrive_expect_tx", "arrive_drop_expect_tx", "expect_tx", "complete_tx",
  "test_wait_token", "try_wait_token", "test_wait_parity", "try_wait_parity", "try_wait_parity_nohint",
  "test_wait_raw_token", "inval", "store", "xor_store"};

#define F_PERLANE_COUNT 1u  // count/tx argument is arg + lane

struct Step { int op; u32 arg; u64 arg64; u32 mask; u32 flags; };
struct Seq { Step steps[MAXSTEPS]; int n; };

// Per (sequence, step), recorded by lane 0.
struct StepOut {
  u64 ld, ldv, ldg, ldf, ldlate;       // run 0 reads after the step
  u64 atom64, atom32;                  // run 1 reads after the step
  u64 snap, snaplate;                  // run 2+k: after inval
  u64 atom_tok, snap_tok;              // token of the step in runs 1 and 2+k (first active lane)
  u32 atom_res, snap_res;
  long long cycles;                    // run 0: clock64 around the step (lane 0's view)
};
// Per (sequence, step, lane), run 0.
struct LaneOut { u64 tok; u32 res; u32 pc; };

__host__ __device__ static inline bool op_has_token(int op) {
  return op == OP_ARRIVE || op == OP_ARRIVE_CNT || op == OP_ARRIVE_NOC || op == OP_DROP || op == OP_DROP_CNT ||
         op == OP_DROP_NOC || op == OP_ARRIVE_TX || op == OP_DROP_TX;
}
__host__ __device__ static inline bool op_has_result(int op) {
  return op == OP_TEST_TOK || op == OP_TRY_TOK || op == OP_TEST_PAR || op == OP_TRY_PAR || op == OP_TRY_PAR_NOHINT ||
         op == OP_TEST_RAW;
}

// ---------------------------------------------------------------- device side
__device__ __forceinline__ u64 rd_ld(u32 a) { u64 v; asm volatile("ld.shared.b64 %0, [%1];" : "=l"(v) : "r"(a) : "memory"); return v; }
__device__ __forceinline__ u64 rd_ldv(u32 a) { u64 v; asm volatile("ld.volatile.shared.b64 %0, [%1];" : "=l"(v) : "r"(a) : "memory"); return v; }
__device__ __forceinline__ u64 rd_ldg(const void* p) { u64 v; asm volatile("ld.volatile.b64 %0, [%1];" : "=l"(v) : "l"(p) : "memory"); return v; }
__device__ __forceinline__ u64 rd_ldf(u32 a) {
  u64 v;
  asm volatile("fence.proxy.async.shared::cta;\n\tld.volatile.shared.b64 %0, [%1];" : "=l"(v) : "r"(a) : "memory");
  return v;
}
__device__ __forceinline__ u64 rd_atom64(u32 a) {
  u64 v; asm volatile("atom.shared.or.b64 %0, [%1], %2;" : "=l"(v) : "r"(a), "l"(0ull) : "memory"); return v;
}
__device__ __forceinline__ u64 rd_atom32x2(u32 a) {
  u32 lo, hi;
  asm volatile("atom.shared.or.b32 %0, [%1], %2;" : "=r"(lo) : "r"(a), "r"(0u) : "memory");
  asm volatile("atom.shared.or.b32 %0, [%1], %2;" : "=r"(hi) : "r"(a + 4), "r"(0u) : "memory");
  return ((u64)hi << 32) | lo;
}
__device__ __forceinline__ void do_inval(u32 a) { asm volatile("mbarrier.inval.shared::cta.b64 [%0];" :: "r"(a) : "memory"); }
__device__ __forceinline__ void do_store(u32 a, u64 v) {
  asm volatile("st.volatile.shared.b64 [%0], %1;\n\tfence.proxy.async.shared::cta;" :: "r"(a), "l"(v) : "memory");
}
__device__ __forceinline__ u32 pending_count(u64 t) {
  u32 r; asm volatile("mbarrier.pending_count.b64 %0, %1;" : "=r"(r) : "l"(t)); return r;
}

#define WAIT_ASM(instr, ...) \
  asm volatile("{\n\t.reg .pred p;\n\t" instr "\n\tselp.u32 %0, 1, 0, p;\n\t}" : "=r"(r) : __VA_ARGS__ : "memory")

// Executes one step for this lane. Returns the token (0 if none); *res the wait result (0xffffffff if none).
__device__ __noinline__ u64 exec_step(const Step& st, u32 a, int lane, const u64* toks, u32* res) {
  u64 t = 0;
  u32 r = 0xffffffffu;
  u32 c = st.arg + ((st.flags & F_PERLANE_COUNT) ? (u32)lane : 0u);
  switch (st.op) {
    case OP_INIT: asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(a), "r"(c) : "memory"); break;
    case OP_ARRIVE: asm volatile("mbarrier.arrive.shared::cta.b64 %0, [%1];" : "=l"(t) : "r"(a) : "memory"); break;
    case OP_ARRIVE_CNT: asm volatile("mbarrier.arrive.shared::cta.b64 %0, [%1], %2;" : "=l"(t) : "r"(a), "r"(c) : "memory"); break;
    case OP_ARRIVE_NOC: asm volatile("mbarrier.arrive.noComplete.shared::cta.b64 %0, [%1], %2;" : "=l"(t) : "r"(a), "r"(c) : "memory"); break;
    case OP_DROP: asm volatile("mbarrier.arrive_drop.shared::cta.b64 %0, [%1];" : "=l"(t) : "r"(a) : "memory"); break;
    case OP_DROP_CNT: asm volatile("mbarrier.arrive_drop.shared::cta.b64 %0, [%1], %2;" : "=l"(t) : "r"(a), "r"(c) : "memory"); break;
    case OP_DROP_NOC: asm volatile("mbarrier.arrive_drop.noComplete.shared::cta.b64 %0, [%1], %2;" : "=l"(t) : "r"(a), "r"(c) : "memory"); break;
    case OP_ARRIVE_TX: asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 %0, [%1], %2;" : "=l"(t) : "r"(a), "r"(c) : "memory"); break;
    case OP_DROP_TX: asm volatile("mbarrier.arrive_drop.expect_tx.shared::cta.b64 %0, [%1], %2;" : "=l"(t) : "r"(a), "r"(c) : "memory"); break;
    case OP_EXPECT_TX: asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;" :: "r"(a), "r"(c) : "memory"); break;
    case OP_COMPLETE_TX: asm volatile("mbarrier.complete_tx.relaxed.cta.shared::cta.b64 [%0], %1;" :: "r"(a), "r"(c) : "memory"); break;
    case OP_TEST_TOK: { u64 tk = toks[st.arg % MAXSTEPS]; WAIT_ASM("mbarrier.test_wait.shared::cta.b64 p, [%1], %2;", "r"(a), "l"(tk)); break; }
    case OP_TRY_TOK: { u64 tk = toks[st.arg % MAXSTEPS]; u32 h = (u32)st.arg64; WAIT_ASM("mbarrier.try_wait.shared::cta.b64 p, [%1], %2, %3;", "r"(a), "l"(tk), "r"(h)); break; }
    case OP_TEST_PAR: WAIT_ASM("mbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2;", "r"(a), "r"(c)); break;
    case OP_TRY_PAR: { u32 h = (u32)st.arg64; WAIT_ASM("mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2, %3;", "r"(a), "r"(c), "r"(h)); break; }
    case OP_TRY_PAR_NOHINT: WAIT_ASM("mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;", "r"(a), "r"(c)); break;
    case OP_TEST_RAW: { u64 tk = st.arg64; WAIT_ASM("mbarrier.test_wait.shared::cta.b64 p, [%1], %2;", "r"(a), "l"(tk)); break; }
    case OP_INVAL: do_inval(a); break;
    case OP_STORE: do_store(a, st.arg64); break;
    case OP_XORSTORE: do_store(a, rd_ldv(a) ^ st.arg64); break;
    default: break;
  }
  *res = r;
  return t;
}

__global__ void __launch_bounds__(32) probe_kernel(const Seq* seqs, StepOut* sout, LaneOut* lout) {
  extern __shared__ __align__(1024) unsigned char smem[];
  const int s = blockIdx.x;
  const int lane = threadIdx.x;
  const Seq* q = &seqs[s];
  const int n = q->n;
  for (int i = lane; i < MAXSLOTS * SLOT_BYTES / 8; i += 32) ((volatile u64*)smem)[i] = 0;
  __syncwarp();
  __threadfence_block();
  u64 toks[MAXSTEPS];
  for (int run = 0; run < 2 + n; ++run) {
    unsigned char* slot = smem + run * SLOT_BYTES;
    const u32 a = (u32)__cvta_generic_to_shared(slot);
    const int last = run < 2 ? n - 1 : run - 2;
    for (int k = 0; k < MAXSTEPS; ++k) toks[k] = 0;
    for (int k = 0; k <= last; ++k) {
      const Step st = q->steps[k];
      const bool active = (st.mask >> lane) & 1u;
      u32 r = 0xffffffffu;
      u64 t = 0;
      __syncwarp();
      long long c0 = clock64();
      if (active) t = exec_step(st, a, lane, toks, &r);
      long long c1 = clock64();
      __syncwarp();
      toks[k] = t;
      const int src = st.mask ? (__ffs(st.mask) - 1) : 0;
      const u64 t_first = __shfl_sync(0xffffffffu, t, src);
      const u32 r_first = __shfl_sync(0xffffffffu, r, src);
      StepOut* o = &sout[s * MAXSTEPS + k];
      if (run == 0) {
        LaneOut* lo = &lout[(s * MAXSTEPS + k) * 32 + lane];
        lo->tok = t;
        lo->res = r;
        lo->pc = op_has_token(st.op) && active ? pending_count(t) : 0xffffffffu;
        if (lane == 0) {
          o->cycles = c1 - c0;
          o->ld = rd_ld(a);
          o->ldv = rd_ldv(a);
          o->ldg = rd_ldg(slot);
          o->ldf = rd_ldf(a);
          __nanosleep(LATE_SLEEP_NS);
          o->ldlate = rd_ldv(a);
        }
      } else if (run == 1) {
        if (lane == 0) {
          o->atom_tok = t_first;
          o->atom_res = r_first;
          o->atom64 = rd_atom64(a);
          o->atom32 = rd_atom32x2(a);
        }
      } else if (k == last) {
        if (lane == 0) {
          o->snap_tok = t_first;
          o->snap_res = r_first;
          do_inval(a);
          o->snap = rd_ldv(a);
          __nanosleep(SNAP_SLEEP_NS);
          o->snaplate = rd_ldv(a);
        }
      }
      __syncwarp();
    }
    // leave nothing live behind in the SYNCS unit's view of this slot
    if (lane == 0 && run < 2) do_inval(a);
    __syncwarp();
  }
}

// Many barriers at once: does touching more of them push state out to memory?
// out layout: [5][nb] = word after init, token of one arrive, word after all arrives,
//                      word after a 20 us sleep, word after inval.
__global__ void capacity_kernel(u64* out, int nb, int stride_bytes, u32 count) {
  extern __shared__ __align__(1024) unsigned char smem[];
  if (threadIdx.x != 0) return;
  const u32 base = (u32)__cvta_generic_to_shared(smem);
  for (int i = 0; i < nb; ++i) do_store(base + i * stride_bytes, 0);
  for (int i = 0; i < nb; ++i) asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(base + i * stride_bytes), "r"(count) : "memory");
  for (int i = 0; i < nb; ++i) out[0 * nb + i] = rd_ldv(base + i * stride_bytes);
  for (int i = 0; i < nb; ++i) {
    u64 t; asm volatile("mbarrier.arrive.shared::cta.b64 %0, [%1];" : "=l"(t) : "r"(base + i * stride_bytes) : "memory");
    out[1 * nb + i] = t;
  }
  for (int i = 0; i < nb; ++i) out[2 * nb + i] = rd_ldv(base + i * stride_bytes);
  __nanosleep(LATE_SLEEP_NS);
  for (int i = 0; i < nb; ++i) out[3 * nb + i] = rd_ldv(base + i * stride_bytes);
  for (int i = 0; i < nb; ++i) do_inval(base + i * stride_bytes);
  for (int i = 0; i < nb; ++i) out[4 * nb + i] = rd_ldv(base + i * stride_bytes);
}

// ---------------------------------------------------------------- host side
struct NamedSeq { std::string name; std::string note; Seq seq; };

static Step S(int op, u32 arg = 0, u64 arg64 = 0, u32 mask = 1, u32 flags = 0) {
  Step s; s.op = op; s.arg = arg; s.arg64 = arg64; s.mask = mask; s.flags = flags; return s;
}
static NamedSeq mk(const char* name, const char* note, std::vector<Step> v) {
  NamedSeq ns; ns.name = name; ns.note = note;
  memset(&ns.seq, 0, sizeof(ns.seq));
  if (v.size() > MAXSTEPS) { fprintf(stderr, "sequence %s too long (%zu)\n", name, v.size()); exit(2); }
  for (size_t i = 0; i < v.size(); ++i) ns.seq.steps[i] = v[i];
  ns.seq.n = (int)v.size();
  return ns;
}

static const u32 MAXC = (1u << 20) - 1;
static const u64 HINT = 2000;  // ns
static const u32 ALL = 0xffffffffu;

static std::vector<NamedSeq> seqs_safe() {
  std::vector<NamedSeq> v;
  v.push_back(mk("init1_phases", "init 1; single arrives, each completes a phase", {
    S(OP_INIT, 1), S(OP_ARRIVE), S(OP_ARRIVE), S(OP_ARRIVE), S(OP_ARRIVE), S(OP_ARRIVE), S(OP_ARRIVE),
    S(OP_TEST_PAR, 0), S(OP_TEST_PAR, 1)}));
  v.push_back(mk("init2_phases", "init 2; single arrives through 3 phases; waits on tokens and parities", {
    S(OP_INIT, 2), S(OP_ARRIVE), S(OP_TEST_TOK, 1), S(OP_TEST_PAR, 0), S(OP_TEST_PAR, 1),
    S(OP_ARRIVE), S(OP_TEST_TOK, 1), S(OP_TEST_TOK, 5), S(OP_TEST_PAR, 0), S(OP_TEST_PAR, 1),
    S(OP_ARRIVE), S(OP_ARRIVE), S(OP_ARRIVE), S(OP_ARRIVE), S(OP_TEST_PAR, 0), S(OP_TEST_PAR, 1)}));
  v.push_back(mk("init3_phases", "init 3; single arrives through 2+ phases", {
    S(OP_INIT, 3), S(OP_ARRIVE), S(OP_ARRIVE), S(OP_ARRIVE), S(OP_ARRIVE), S(OP_ARRIVE), S(OP_ARRIVE), S(OP_ARRIVE),
    S(OP_TEST_PAR, 0), S(OP_TEST_PAR, 1)}));
  v.push_back(mk("init32", "init 32; 3 single arrives, arrive count 29 completes, one more", {
    S(OP_INIT, 32), S(OP_ARRIVE), S(OP_ARRIVE), S(OP_ARRIVE), S(OP_ARRIVE_CNT, 29), S(OP_ARRIVE), S(OP_TEST_PAR, 0)}));
  v.push_back(mk("init1000", "init 1000", {
    S(OP_INIT, 1000), S(OP_ARRIVE), S(OP_ARRIVE_CNT, 998), S(OP_ARRIVE), S(OP_ARRIVE), S(OP_TEST_PAR, 0), S(OP_TEST_PAR, 1)}));
  v.push_back(mk("init_max", "init 2^20-1", {
    S(OP_INIT, MAXC), S(OP_ARRIVE), S(OP_ARRIVE_CNT, MAXC - 2), S(OP_TEST_PAR, 0), S(OP_ARRIVE), S(OP_TEST_PAR, 0),
    S(OP_ARRIVE), S(OP_ARRIVE_CNT, MAXC - 1), S(OP_TEST_PAR, 1)}));
  v.push_back(mk("arrive_count", "init 10; arrive count 3, 3, 4; then count 10 in one go", {
    S(OP_INIT, 10), S(OP_ARRIVE_CNT, 3), S(OP_ARRIVE_CNT, 3), S(OP_TEST_PAR, 0), S(OP_ARRIVE_CNT, 4), S(OP_TEST_TOK, 4),
    S(OP_TEST_PAR, 0), S(OP_ARRIVE_CNT, 10), S(OP_TEST_PAR, 1), S(OP_ARRIVE_CNT, 1)}));
  v.push_back(mk("expect_tx_16", "init 1; expect_tx 16; complete_tx 8+8 around the arrive", {
    S(OP_INIT, 1), S(OP_EXPECT_TX, 16), S(OP_COMPLETE_TX, 8), S(OP_ARRIVE), S(OP_TEST_PAR, 0), S(OP_COMPLETE_TX, 8),
    S(OP_TEST_PAR, 0), S(OP_ARRIVE), S(OP_TEST_PAR, 1)}));
  v.push_back(mk("arrive_expect_tx_1000", "init 2; arrive.expect_tx 1000; complete_tx in pieces; arrive.expect_tx 0", {
    S(OP_INIT, 2), S(OP_ARRIVE_TX, 1000), S(OP_COMPLETE_TX, 250), S(OP_COMPLETE_TX, 250), S(OP_ARRIVE), S(OP_TEST_PAR, 0),
    S(OP_COMPLETE_TX, 499), S(OP_TEST_PAR, 0), S(OP_COMPLETE_TX, 1), S(OP_TEST_PAR, 0), S(OP_ARRIVE_TX, 0), S(OP_ARRIVE),
    S(OP_TEST_PAR, 1)}));
  v.push_back(mk("expect_tx_max", "init 1; expect_tx 2^20-1; complete in two pieces", {
    S(OP_INIT, 1), S(OP_EXPECT_TX, MAXC), S(OP_COMPLETE_TX, 1u << 19), S(OP_ARRIVE), S(OP_TEST_PAR, 0),
    S(OP_COMPLETE_TX, (1u << 19) - 1), S(OP_TEST_PAR, 0), S(OP_ARRIVE_TX, MAXC), S(OP_COMPLETE_TX, MAXC), S(OP_TEST_PAR, 1)}));
  v.push_back(mk("expect_tx_zero", "init 1; expect_tx 0; arrive.expect_tx 0", {
    S(OP_INIT, 1), S(OP_EXPECT_TX, 0), S(OP_ARRIVE_TX, 0), S(OP_TEST_PAR, 0)}));
  v.push_back(mk("tx_negative", "init 1; complete_tx 100 before any expect_tx (tx = -100); arrive; expect_tx back to 0", {
    S(OP_INIT, 1), S(OP_COMPLETE_TX, 100), S(OP_ARRIVE), S(OP_TEST_PAR, 0), S(OP_EXPECT_TX, 60), S(OP_TEST_PAR, 0),
    S(OP_EXPECT_TX, 40), S(OP_TEST_PAR, 0), S(OP_ARRIVE), S(OP_TEST_PAR, 1)}));
  v.push_back(mk("tx_negative_large", "init 2; complete_tx 2^20-1 (tx = -(2^20-1)); arrive twice; expect_tx 2^20-1", {
    S(OP_INIT, 2), S(OP_COMPLETE_TX, MAXC), S(OP_ARRIVE), S(OP_ARRIVE), S(OP_TEST_PAR, 0), S(OP_EXPECT_TX, MAXC),
    S(OP_TEST_PAR, 0), S(OP_ARRIVE)}));
  v.push_back(mk("tx_phases", "init 1; arrive.expect_tx 64 + complete_tx 64, then 128 + 128, 3 phases", {
    S(OP_INIT, 1), S(OP_ARRIVE_TX, 64), S(OP_COMPLETE_TX, 64), S(OP_ARRIVE_TX, 128), S(OP_COMPLETE_TX, 128),
    S(OP_ARRIVE_TX, 0x5555), S(OP_COMPLETE_TX, 0x5555), S(OP_ARRIVE)}));
  v.push_back(mk("noComplete", "init 5; arrive.noComplete 1,2,1; arrive completes; noComplete 4 in phase 1", {
    S(OP_INIT, 5), S(OP_ARRIVE_NOC, 1), S(OP_ARRIVE_NOC, 2), S(OP_ARRIVE_NOC, 1), S(OP_ARRIVE), S(OP_TEST_PAR, 0),
    S(OP_ARRIVE_NOC, 4), S(OP_ARRIVE)}));
  v.push_back(mk("arrive_drop", "init 3; arrive_drop; arrives through 4 phases, a second drop", {
    S(OP_INIT, 3), S(OP_DROP), S(OP_ARRIVE), S(OP_TEST_PAR, 0), S(OP_ARRIVE), S(OP_TEST_PAR, 0), S(OP_ARRIVE), S(OP_ARRIVE),
    S(OP_DROP), S(OP_ARRIVE), S(OP_ARRIVE), S(OP_TEST_PAR, 0), S(OP_TEST_PAR, 1)}));
  v.push_back(mk("arrive_drop_count", "init 10; arrive_drop count 4; arrive count 6 twice", {
    S(OP_INIT, 10), S(OP_DROP_CNT, 4), S(OP_ARRIVE_CNT, 6), S(OP_TEST_PAR, 0), S(OP_ARRIVE_CNT, 5), S(OP_ARRIVE),
    S(OP_TEST_PAR, 1)}));
  v.push_back(mk("drop_noComplete", "init 6; arrive_drop.noComplete 2; arrive.noComplete 1; arrive 3 completes; arrive 4", {
    S(OP_INIT, 6), S(OP_DROP_NOC, 2), S(OP_ARRIVE_NOC, 1), S(OP_ARRIVE_CNT, 3), S(OP_TEST_PAR, 0), S(OP_ARRIVE_CNT, 4),
    S(OP_TEST_PAR, 1)}));
  v.push_back(mk("drop_expect_tx", "init 3; arrive_drop.expect_tx 32; arrive; complete_tx 32; arrive", {
    S(OP_INIT, 3), S(OP_DROP_TX, 32), S(OP_ARRIVE), S(OP_COMPLETE_TX, 32), S(OP_TEST_PAR, 0), S(OP_ARRIVE),
    S(OP_TEST_PAR, 0), S(OP_ARRIVE), S(OP_ARRIVE)}));
  v.push_back(mk("wait_tokens", "init 2; test/try_wait with tokens of the current, previous, two- and three-ago phases", {
    S(OP_INIT, 2),                       // 0
    S(OP_ARRIVE),                        // 1  phase 0 token
    S(OP_TEST_TOK, 1),                   // 2  current phase -> false
    S(OP_TRY_TOK, 1, HINT),              // 3  current phase, try_wait with hint -> false
    S(OP_ARRIVE),                        // 4  completes phase 0 (token of phase 0)
    S(OP_TEST_TOK, 1),                   // 5  previous -> true
    S(OP_TEST_TOK, 4),                   // 6  previous -> true
    S(OP_ARRIVE),                        // 7  phase 1 token
    S(OP_TEST_TOK, 7),                   // 8  current -> false
    S(OP_TEST_TOK, 1),                   // 9  previous (phase 0) -> true
    S(OP_ARRIVE),                        // 10 completes phase 1; now phase 2
    S(OP_TEST_TOK, 1),                   // 11 two phases ago (UB)
    S(OP_TRY_TOK, 1, HINT),              // 12 two phases ago, try_wait (UB)
    S(OP_TEST_TOK, 7),                   // 13 previous -> true
    S(OP_ARRIVE),                        // 14 phase 2 token
    S(OP_ARRIVE),                        // 15 completes phase 2; now phase 3
    S(OP_TEST_TOK, 1),                   // 16 three phases ago (UB)
    S(OP_TEST_TOK, 7),                   // 17 two phases ago (UB)
    S(OP_TEST_TOK, 14),                  // 18 previous -> true
    S(OP_TEST_PAR, 0), S(OP_TEST_PAR, 1), S(OP_TRY_PAR, 0, HINT), S(OP_TRY_PAR, 1, HINT)}));
  v.push_back(mk("wait_raw_tokens", "init 2; test_wait with made-up tokens, in phase 0 and phase 1", {
    S(OP_INIT, 2), S(OP_TEST_RAW, 0, 0ull), S(OP_TEST_RAW, 0, 1ull << 63), S(OP_TEST_RAW, 0, 0x7fffffffffffffffull),
    S(OP_TEST_RAW, 0, 0xffffffffffffffffull), S(OP_TEST_RAW, 0, 0x00000000ffffffffull), S(OP_TEST_RAW, 0, 0x4000000000000000ull),
    S(OP_ARRIVE), S(OP_ARRIVE),
    S(OP_TEST_RAW, 0, 0ull), S(OP_TEST_RAW, 0, 1ull << 63), S(OP_TEST_RAW, 0, 0x7fffffffffffffffull),
    S(OP_TEST_RAW, 0, 0xffffffffffffffffull), S(OP_TEST_RAW, 0, 0x00000000ffffffffull), S(OP_TEST_RAW, 0, 0x4000000000000000ull)}));
  v.push_back(mk("parity_phase0", "init 2: parity waits in phase 0 (parity 1 names the phase before phase 0)", {
    S(OP_INIT, 2), S(OP_TEST_PAR, 0), S(OP_TEST_PAR, 1), S(OP_TRY_PAR, 0, HINT), S(OP_TRY_PAR, 1, HINT),
    S(OP_TRY_PAR_NOHINT, 1), S(OP_TRY_PAR_NOHINT, 0)}));
  v.push_back(mk("inval_word", "init 7; arrive; inval; re-init; arrive; arrive.expect_tx 100; inval", {
    S(OP_INIT, 7), S(OP_ARRIVE), S(OP_INVAL), S(OP_INIT, 7), S(OP_ARRIVE), S(OP_ARRIVE_TX, 100), S(OP_INVAL)}));
  v.push_back(mk("init_over_garbage", "store arbitrary data; init over it; inval; again", {
    S(OP_STORE, 0, 0xdeadbeefcafef00dull), S(OP_INIT, 5), S(OP_ARRIVE), S(OP_INVAL),
    S(OP_STORE, 0, 0x0123456789abcdefull), S(OP_INIT, 1), S(OP_INVAL), S(OP_STORE, 0, 0xffffffffffffffffull),
    S(OP_INIT, 3), S(OP_INVAL)}));
  v.push_back(mk("init_counts", "init with counts 1,2,3,32,1000,2^20-1,0x12345, inval between", {
    S(OP_INIT, 1), S(OP_INVAL), S(OP_INIT, 2), S(OP_INVAL), S(OP_INIT, 3), S(OP_INVAL), S(OP_INIT, 32), S(OP_INVAL),
    S(OP_INIT, 1000), S(OP_INVAL), S(OP_INIT, MAXC), S(OP_INVAL), S(OP_INIT, 0x12345), S(OP_INVAL)}));
  {
    std::vector<Step> st; st.push_back(S(OP_INIT, 1));
    for (int i = 0; i < 19; ++i) st.push_back(S(OP_ARRIVE));
    st.push_back(S(OP_TEST_PAR, 0)); st.push_back(S(OP_TEST_PAR, 1));
    v.push_back(mk("many_phases", "init 1; 19 arrives = 19 phases (does anything count past parity?)", st));
  }
  {
    std::vector<Step> st; st.push_back(S(OP_INIT, 3));
    st.push_back(S(OP_ARRIVE_TX, 16)); st.push_back(S(OP_COMPLETE_TX, 16)); st.push_back(S(OP_ARRIVE));
    for (int i = 0; i < 8; ++i) { st.push_back(S(OP_ARRIVE)); st.push_back(S(OP_ARRIVE)); st.push_back(S(OP_ARRIVE)); }
    v.push_back(mk("many_phases_3", "init 3; arrive.expect_tx + complete_tx + arrive, then 24 arrives = 9 phases", st));
  }
  // ---- one warp, several lanes at once
  v.push_back(mk("warp_arrive_32", "init 32; all 32 lanes arrive at once; again (phase 1)", {
    S(OP_INIT, 32), S(OP_ARRIVE, 0, 0, ALL), S(OP_TEST_PAR, 0), S(OP_ARRIVE, 0, 0, ALL), S(OP_TEST_PAR, 1)}));
  v.push_back(mk("warp_arrive_64", "init 64; all 32 lanes arrive twice (half a phase each)", {
    S(OP_INIT, 64), S(OP_ARRIVE, 0, 0, ALL), S(OP_TEST_PAR, 0), S(OP_ARRIVE, 0, 0, ALL), S(OP_TEST_PAR, 0),
    S(OP_ARRIVE, 0, 0, ALL)}));
  v.push_back(mk("warp_arrive_odd_lanes", "init 40; the 16 odd lanes arrive; then 24 more lanes (completes)", {
    S(OP_INIT, 40), S(OP_ARRIVE, 0, 0, 0xaaaaaaaau), S(OP_ARRIVE, 0, 0, 0x00ffffffu), S(OP_TEST_PAR, 0)}));
  v.push_back(mk("warp_arrive_count_perlane", "init 1000; lane i arrives with count i+1 (528 in all); then count 472 by lane 0", {
    S(OP_INIT, 1000), S(OP_ARRIVE_CNT, 1, 0, ALL, F_PERLANE_COUNT), S(OP_ARRIVE_CNT, 472), S(OP_TEST_PAR, 0)}));
  v.push_back(mk("warp_noComplete", "init 300; 32 lanes arrive.noComplete 2; 16 lanes noComplete count lane+1; arrive 100 completes", {
    S(OP_INIT, 300), S(OP_ARRIVE_NOC, 2, 0, ALL), S(OP_ARRIVE_NOC, 1, 0, 0x0000ffffu, F_PERLANE_COUNT),
    S(OP_ARRIVE_CNT, 300 - 64 - 136), S(OP_TEST_PAR, 0)}));
  v.push_back(mk("warp_drop", "init 64; 32 lanes arrive_drop; 32 lanes arrive (completes, expected now 32); 32 lanes arrive", {
    S(OP_INIT, 64), S(OP_DROP, 0, 0, ALL), S(OP_ARRIVE, 0, 0, ALL), S(OP_TEST_PAR, 0), S(OP_ARRIVE, 0, 0, ALL),
    S(OP_TEST_PAR, 1)}));
  v.push_back(mk("warp_arrive_tx", "init 32; 32 lanes arrive.expect_tx lane+1 (528 bytes); complete_tx 528", {
    S(OP_INIT, 32), S(OP_ARRIVE_TX, 1, 0, ALL, F_PERLANE_COUNT), S(OP_TEST_PAR, 0), S(OP_COMPLETE_TX, 528),
    S(OP_TEST_PAR, 0)}));
  v.push_back(mk("warp_drop_noComplete", "init 96; 32 lanes arrive_drop.noComplete 1; lane 0 arrive 32", {
    S(OP_INIT, 96), S(OP_DROP_NOC, 1, 0, ALL), S(OP_ARRIVE_CNT, 32), S(OP_ARRIVE_CNT, 32), S(OP_TEST_PAR, 0)}));
  return v;
}

static std::vector<NamedSeq> seqs_ub() {
  std::vector<NamedSeq> v;
  v.push_back(mk("ub_init0", "init 0 (out of range)", {
    S(OP_INIT, 0), S(OP_TEST_PAR, 0), S(OP_TEST_PAR, 1), S(OP_ARRIVE), S(OP_TEST_PAR, 0), S(OP_TEST_PAR, 1), S(OP_INVAL)}));
  v.push_back(mk("ub_init_2p20", "init 2^20 (out of range)", {
    S(OP_INIT, 1u << 20), S(OP_TEST_PAR, 0), S(OP_ARRIVE), S(OP_TEST_PAR, 0), S(OP_TEST_PAR, 1), S(OP_INVAL)}));
  v.push_back(mk("ub_arrive_overflow", "init 2; arrive count 5 (more than pending)", {
    S(OP_INIT, 2), S(OP_ARRIVE_CNT, 5), S(OP_TEST_PAR, 0), S(OP_TEST_PAR, 1), S(OP_ARRIVE), S(OP_TEST_PAR, 0),
    S(OP_TEST_PAR, 1), S(OP_ARRIVE)}));
  v.push_back(mk("ub_arrive_count0", "init 2; arrive count 0", {
    S(OP_INIT, 2), S(OP_ARRIVE_CNT, 0), S(OP_TEST_PAR, 0), S(OP_ARRIVE), S(OP_ARRIVE), S(OP_TEST_PAR, 0)}));
  v.push_back(mk("ub_noComplete_completes", "init 2; arrive.noComplete 2 completes the phase", {
    S(OP_INIT, 2), S(OP_ARRIVE_NOC, 2), S(OP_TEST_PAR, 0), S(OP_TEST_PAR, 1), S(OP_ARRIVE), S(OP_ARRIVE)}));
  v.push_back(mk("ub_tx_overflow", "init 1; expect_tx 2^20-1 then 1 more (tx = 2^20)", {
    S(OP_INIT, 1), S(OP_EXPECT_TX, MAXC), S(OP_EXPECT_TX, 1), S(OP_ARRIVE), S(OP_TEST_PAR, 0), S(OP_COMPLETE_TX, 1u << 20),
    S(OP_TEST_PAR, 0)}));
  v.push_back(mk("ub_tx_underflow", "init 1; complete_tx 2^20-1 then 1 more (tx = -2^20)", {
    S(OP_INIT, 1), S(OP_COMPLETE_TX, MAXC), S(OP_COMPLETE_TX, 1), S(OP_ARRIVE), S(OP_TEST_PAR, 0),
    S(OP_EXPECT_TX, 1u << 20), S(OP_TEST_PAR, 0)}));
  v.push_back(mk("ub_drop_to_zero", "init 1; arrive_drop (expected becomes 0); arrive", {
    S(OP_INIT, 1), S(OP_DROP), S(OP_TEST_PAR, 0), S(OP_TEST_PAR, 1), S(OP_ARRIVE), S(OP_TEST_PAR, 0), S(OP_TEST_PAR, 1)}));
  v.push_back(mk("ub_arrive_uninit", "arrive on a zeroed word never initialized", {
    S(OP_STORE, 0, 0), S(OP_TEST_PAR, 0), S(OP_TEST_PAR, 1), S(OP_ARRIVE), S(OP_TEST_PAR, 0), S(OP_ARRIVE), S(OP_INVAL)}));
  v.push_back(mk("ub_init_twice", "init 3; arrive; init 5 again without inval", {
    S(OP_INIT, 3), S(OP_ARRIVE), S(OP_INIT, 5), S(OP_ARRIVE), S(OP_INVAL)}));
  v.push_back(mk("ub_after_inval", "init 3; arrive; inval; then waits and an arrive on the invalidated object", {
    S(OP_INIT, 3), S(OP_ARRIVE), S(OP_INVAL), S(OP_TEST_PAR, 0), S(OP_TEST_PAR, 1), S(OP_EXPECT_TX, 8), S(OP_ARRIVE),
    S(OP_INVAL)}));
  v.push_back(mk("ub_store_live", "init 3; arrive; ordinary store over the live word; arrive", {
    S(OP_INIT, 3), S(OP_ARRIVE), S(OP_STORE, 0, 0ull), S(OP_ARRIVE), S(OP_TEST_PAR, 0), S(OP_INVAL)}));
  return v;
}

static std::vector<NamedSeq> seqs_forge() {
  std::vector<NamedSeq> v;
  // After inval the word holds whatever inval left; write it back (optionally xor'd) and keep using it
  // without init. UB per the spec; shows whether the memory word is what the hardware works on.
  v.push_back(mk("forge_roundtrip", "init 3; arrive; inval; write the word back unchanged; arrive; arrive", {
    S(OP_INIT, 3), S(OP_ARRIVE), S(OP_INVAL), S(OP_XORSTORE, 0, 0), S(OP_ARRIVE), S(OP_TEST_PAR, 0), S(OP_ARRIVE),
    S(OP_TEST_PAR, 0), S(OP_INVAL)}));
  const int bits[] = {63, 0, 21, 31, 32, 41, 42, 62, 1, 43};
  for (int b : bits) {
    char name[64], note[128];
    snprintf(name, sizeof name, "forge_xor_bit%d", b);
    snprintf(note, sizeof note, "init 3; arrive; inval; flip bit %d of the word; arrive; arrive; arrive", b);
    v.push_back(mk(name, note, {
      S(OP_INIT, 3), S(OP_ARRIVE), S(OP_INVAL), S(OP_XORSTORE, 0, 1ull << b), S(OP_TEST_PAR, 0), S(OP_TEST_PAR, 1),
      S(OP_ARRIVE), S(OP_ARRIVE), S(OP_TEST_PAR, 0), S(OP_ARRIVE), S(OP_TEST_PAR, 0), S(OP_INVAL)}));
  }
  // The value SASS computes for init 3 (SYNCS.EXCH.64 of lo = (2^20-3) << 1, hi = (2^20-3) << 11), written with
  // an ordinary store instead of mbarrier.init; and the same with bit 63 set.
  v.push_back(mk("forge_store_init3", "ordinary store of init-3's word (per SASS), no init; 3 arrives", {
    S(OP_STORE, 0, 0x7fffe800001ffffaull), S(OP_TEST_PAR, 0), S(OP_TEST_PAR, 1), S(OP_ARRIVE), S(OP_ARRIVE),
    S(OP_TEST_PAR, 0), S(OP_ARRIVE), S(OP_TEST_PAR, 0), S(OP_TEST_PAR, 1), S(OP_ARRIVE), S(OP_INVAL)}));
  v.push_back(mk("forge_store_init3_bit63", "ordinary store of init-3's word with bit 63 set, no init; 3 arrives", {
    S(OP_STORE, 0, 0xffffe800001ffffaull), S(OP_TEST_PAR, 0), S(OP_TEST_PAR, 1), S(OP_ARRIVE), S(OP_ARRIVE),
    S(OP_TEST_PAR, 0), S(OP_ARRIVE), S(OP_TEST_PAR, 0), S(OP_TEST_PAR, 1), S(OP_ARRIVE), S(OP_INVAL)}));
  v.push_back(mk("forge_no_inval", "init 3; arrive; flip bit 63 with an ordinary store while live; arrive", {
    S(OP_INIT, 3), S(OP_ARRIVE), S(OP_XORSTORE, 0, 1ull << 63), S(OP_TEST_PAR, 0), S(OP_ARRIVE), S(OP_TEST_PAR, 0),
    S(OP_INVAL)}));
  return v;
}

// ---------------------------------------------------------------- CPU stand-in (for --mock only)
// A toy model used only to exercise the host side without a GPU. Its encoding is a GUESS; no result
// of a mock run is evidence of anything.
struct Mock { int phase; u32 pend, exp; long tx; bool valid; u64 mem; };
static u64 mock_word(const Mock& m) {
  u64 lo = ((u64)((1u << 20) - m.exp) & 0xfffff) << 1;
  u64 hi = ((u64)((1u << 20) - m.pend) & 0xfffff) << 11 | ((u64)(m.phase & 1) << 31);
  return (hi << 32) | lo | (((u64)m.tx & 0x1fffff) << 21);
}
static void mock_maybe_complete(Mock& m) { if (m.pend == 0 && m.tx == 0) { m.phase++; m.pend = m.exp; } }
static void mock_run(const std::vector<NamedSeq>& v, std::vector<StepOut>& so, std::vector<LaneOut>& lo) {
  for (size_t s = 0; s < v.size(); ++s) {
    Mock m; memset(&m, 0, sizeof m);
    u64 toks[MAXSTEPS][32]; memset(toks, 0, sizeof toks);
    for (int k = 0; k < v[s].seq.n; ++k) {
      const Step& st = v[s].seq.steps[k];
      StepOut& o = so[s * MAXSTEPS + k];
      for (int lane = 0; lane < 32; ++lane) {
        LaneOut& l = lo[(s * MAXSTEPS + k) * 32 + lane];
        l.tok = 0; l.res = 0xffffffffu; l.pc = 0xffffffffu;
        if (!((st.mask >> lane) & 1)) continue;
        u32 c = st.arg + ((st.flags & F_PERLANE_COUNT) ? lane : 0);
        u64 before = mock_word(m);
        switch (st.op) {
          case OP_INIT: m.phase = 0; m.pend = m.exp = c; m.tx = 0; m.valid = true; break;
          case OP_ARRIVE: c = 1; /* fallthrough */
          case OP_ARRIVE_CNT: case OP_ARRIVE_NOC: m.pend -= c; l.tok = before; mock_maybe_complete(m); break;
          case OP_DROP: c = 1; /* fallthrough */
          case OP_DROP_CNT: case OP_DROP_NOC: m.exp -= c; m.pend -= c; l.tok = before; mock_maybe_complete(m); break;
          case OP_ARRIVE_TX: m.tx += c; m.pend -= 1; l.tok = before; mock_maybe_complete(m); break;
          case OP_DROP_TX: m.tx += c; m.exp -= 1; m.pend -= 1; l.tok = before; mock_maybe_complete(m); break;
          case OP_EXPECT_TX: m.tx += c; break;
          case OP_COMPLETE_TX: m.tx -= c; mock_maybe_complete(m); break;
          case OP_TEST_TOK: case OP_TRY_TOK: l.res = ((toks[st.arg % MAXSTEPS][lane] >> 63) != (u64)(m.phase & 1)); break;
          case OP_TEST_RAW: l.res = ((st.arg64 >> 63) != (u64)(m.phase & 1)); break;
          case OP_TEST_PAR: case OP_TRY_PAR: case OP_TRY_PAR_NOHINT: l.res = ((c & 1) != (u32)(m.phase & 1)); break;
          case OP_INVAL: m.mem = mock_word(m); m.valid = false; break;
          default: break;
        }
        if (op_has_token(st.op)) l.pc = (1u << 20) - (u32)((l.tok >> 43) & 0xfffff);
        toks[k][lane] = l.tok;
      }
      u64 w = m.valid ? 0x1234 : m.mem;
      o.ld = o.ldv = o.ldg = o.ldf = o.ldlate = o.atom64 = o.atom32 = w;
      o.snap = o.snaplate = mock_word(m);
      int src = st.mask ? __builtin_ctz(st.mask) : 0;
      o.atom_tok = o.snap_tok = lo[(s * MAXSTEPS + k) * 32 + src].tok;
      o.atom_res = o.snap_res = lo[(s * MAXSTEPS + k) * 32 + src].res;
      o.cycles = 42;
    }
  }
}

// ---------------------------------------------------------------- JSON output
static void hex(FILE* f, const char* key, u64 v) { fprintf(f, "\"%s\":\"0x%016llx\"", key, v); }

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { fprintf(stderr, "CUDA error %s at %s:%d: %s\n", cudaGetErrorName(e_), __FILE__, __LINE__, cudaGetErrorString(e_)); err = 1; goto done; } } while (0)

int main(int argc, char** argv) {
  bool mock = false;
  int ai = 1;
  if (argc > 1 && strcmp(argv[1], "--mock") == 0) { mock = true; ai = 2; }
  if (argc > 2 && strcmp(argv[ai], "--list") == 0) {
    // prints "index steps name" for each sequence of a group
    std::string g = argv[ai + 1];
    std::vector<NamedSeq> l = g == "safe" ? seqs_safe() : g == "ub" ? seqs_ub() : seqs_forge();
    for (size_t i = 0; i < l.size(); ++i) printf("%zu %d %s\n", i, l[i].seq.n, l[i].name.c_str());
    return 0;
  }
  if (argc - ai < 2) { fprintf(stderr, "usage: %s [--mock] safe|ub|forge OUT.json [--only I [--upto K]] | --list GROUP\n", argv[0]); return 2; }
  std::string group = argv[ai];
  const char* outpath = argv[ai + 1];
  int only = -1, upto = -1;
  for (int i = ai + 2; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--only") == 0) only = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--upto") == 0) upto = atoi(argv[i + 1]);
  }
  std::vector<NamedSeq> v;
  if (group == "safe") v = seqs_safe();
  else if (group == "ub") v = seqs_ub();
  else if (group == "forge") v = seqs_forge();
  else { fprintf(stderr, "unknown group %s\n", group.c_str()); return 2; }
  if (only >= 0) {
    // one sequence per process (a fault in a launch loses the whole launch), optionally cut to its
    // first `upto` steps (to find the step that faults)
    if (only >= (int)v.size()) { fprintf(stderr, "no sequence %d\n", only); return 2; }
    NamedSeq one = v[only];
    if (upto >= 0 && upto < one.seq.n) one.seq.n = upto;
    v.assign(1, one);
  }

  const int ns = (int)v.size();
  std::vector<Seq> hs(ns);
  for (int i = 0; i < ns; ++i) hs[i] = v[i].seq;
  std::vector<StepOut> so((size_t)ns * MAXSTEPS);
  std::vector<LaneOut> lo((size_t)ns * MAXSTEPS * 32);
  memset(so.data(), 0, so.size() * sizeof(StepOut));
  memset(lo.data(), 0, lo.size() * sizeof(LaneOut));

  // capacity probe configs (safe group only)
  struct Cap { int nb, stride; u32 count; std::vector<u64> out; };
  std::vector<Cap> caps;
  if (group == "safe" && only < 0) {
    caps.push_back({1024, 8, 3, {}}); caps.push_back({256, 8, 3, {}}); caps.push_back({256, 16, 3, {}});
    caps.push_back({256, 128, 3, {}}); caps.push_back({64, 8, 3, {}}); caps.push_back({4, 8, 3, {}});
  }

  char devname[256] = "mock";
  int drv = 0, rt = 0, cc_major = 0, cc_minor = 0, nsm = 0;
  int err = 0;
  FILE* f = nullptr;
  if (mock) {
    // test hook for run.sh's fault handling: MOCK_FAIL=NAME:STEP makes a mock run of sequence NAME that
    // reaches step STEP fail like a faulting launch
    if (const char* mf = getenv("MOCK_FAIL")) {
      std::string m = mf;
      size_t colon = m.find(':');
      for (const auto& q : v)
        if (colon != std::string::npos && q.name == m.substr(0, colon) && q.seq.n > atoi(m.c_str() + colon + 1)) {
          fprintf(stderr, "mock fault in %s\n", q.name.c_str());
          err = 1;
          goto done;
        }
    }
    mock_run(v, so, lo);
    for (auto& c : caps) c.out.assign(5 * c.nb, 0);
  } else {
    Seq* dseq = nullptr; StepOut* dso = nullptr; LaneOut* dlo = nullptr; u64* dcap = nullptr;
    cudaDeviceProp prop;
    const size_t shmem = MAXSLOTS * SLOT_BYTES;
    CK(cudaGetDeviceProperties(&prop, 0));
    snprintf(devname, sizeof devname, "%s", prop.name);
    cc_major = prop.major; cc_minor = prop.minor; nsm = prop.multiProcessorCount;
    CK(cudaDriverGetVersion(&drv));
    CK(cudaRuntimeGetVersion(&rt));
    CK(cudaMalloc(&dseq, sizeof(Seq) * ns));
    CK(cudaMalloc(&dso, sizeof(StepOut) * so.size()));
    CK(cudaMalloc(&dlo, sizeof(LaneOut) * lo.size()));
    CK(cudaMemcpy(dseq, hs.data(), sizeof(Seq) * ns, cudaMemcpyHostToDevice));
    CK(cudaMemset(dso, 0, sizeof(StepOut) * so.size()));
    CK(cudaMemset(dlo, 0, sizeof(LaneOut) * lo.size()));
    probe_kernel<<<ns, 32, shmem>>>(dseq, dso, dlo);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(so.data(), dso, sizeof(StepOut) * so.size(), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(lo.data(), dlo, sizeof(LaneOut) * lo.size(), cudaMemcpyDeviceToHost));
    for (auto& c : caps) {
      c.out.assign(5 * c.nb, 0);
      CK(cudaMalloc(&dcap, sizeof(u64) * 5 * c.nb));
      CK(cudaMemset(dcap, 0, sizeof(u64) * 5 * c.nb));
      capacity_kernel<<<1, 32, (size_t)c.nb * c.stride>>>(dcap, c.nb, c.stride, c.count);
      CK(cudaGetLastError());
      CK(cudaDeviceSynchronize());
      CK(cudaMemcpy(c.out.data(), dcap, sizeof(u64) * 5 * c.nb, cudaMemcpyDeviceToHost));
      CK(cudaFree(dcap));
      dcap = nullptr;
    }
  }

  f = fopen(outpath, "w");
  if (!f) { perror(outpath); return 1; }
  fprintf(f, "{\n\"provenance\":{\"gpu\":\"%s\",\"cc\":\"%d.%d\",\"sms\":%d,\"driver_api_version\":%d,\"runtime_version\":%d,"
             "\"nvcc\":\"%d.%d.%d\",\"group\":\"%s\",\"mock\":%s},\n",
          devname, cc_major, cc_minor, nsm, drv, rt, __CUDACC_VER_MAJOR__, __CUDACC_VER_MINOR__, __CUDACC_VER_BUILD__,
          group.c_str(), mock ? "true" : "false");
  fprintf(f, "\"sequences\":[\n");
  for (int s = 0; s < ns; ++s) fprintf(f, "%s{\"sequence\":\"%s\",\"note\":\"%s\",\"steps\":%d}\n", s ? "," : "", v[s].name.c_str(), v[s].note.c_str(), v[s].seq.n);
  fprintf(f, "],\n\"records\":[\n");
  {
    bool first = true;
    for (int s = 0; s < ns; ++s) {
      for (int k = 0; k < v[s].seq.n; ++k) {
        const Step& st = v[s].seq.steps[k];
        const StepOut& o = so[s * MAXSTEPS + k];
        const int src = st.mask ? __builtin_ctz(st.mask) : 0;
        const LaneOut& l0 = lo[(s * MAXSTEPS + k) * 32 + src];
        const bool no_arg = st.op == OP_NOP || st.op == OP_ARRIVE || st.op == OP_DROP || st.op == OP_INVAL ||
                            st.op == OP_STORE || st.op == OP_XORSTORE || st.op == OP_TEST_RAW;
        fprintf(f, "%s{\"sequence\":\"%s\",\"step\":%d,\"op\":\"%s\",\"args\":[", first ? "" : ",\n", v[s].name.c_str(), k,
                OP_NAMES[st.op]);
        if (!no_arg) fprintf(f, "%u", st.arg);
        fprintf(f, "]");
        if (st.arg64 || st.op == OP_STORE || st.op == OP_XORSTORE || st.op == OP_TEST_RAW) fprintf(f, ",\"arg64_hex\":\"0x%016llx\"", st.arg64);
        fprintf(f, ",\"lane_mask\":\"0x%08x\",\"per_lane_count\":%s,", st.mask, (st.flags & F_PERLANE_COUNT) ? "true" : "false");
        if (op_has_token(st.op)) { hex(f, "token_hex", l0.tok); fprintf(f, ",\"pending_count\":%u,", l0.pc); }
        else fprintf(f, "\"token_hex\":null,\"pending_count\":null,");
        if (op_has_result(st.op)) fprintf(f, "\"result\":%s,", l0.res ? "true" : "false");
        else fprintf(f, "\"result\":null,");
        hex(f, "word_hex", o.ld); fprintf(f, ",");
        hex(f, "ld_volatile_hex", o.ldv); fprintf(f, ",");
        hex(f, "ld_generic_hex", o.ldg); fprintf(f, ",");
        hex(f, "ld_fenced_hex", o.ldf); fprintf(f, ",");
        hex(f, "ld_late_hex", o.ldlate); fprintf(f, ",");
        hex(f, "atom_or64_hex", o.atom64); fprintf(f, ",");
        hex(f, "atom_or32x2_hex", o.atom32); fprintf(f, ",");
        hex(f, "after_inval_hex", o.snap); fprintf(f, ",");
        hex(f, "after_inval_late_hex", o.snaplate); fprintf(f, ",");
        hex(f, "atom_run_token_hex", o.atom_tok); fprintf(f, ",");
        hex(f, "snapshot_run_token_hex", o.snap_tok);
        fprintf(f, ",\"atom_run_result\":%d,\"snapshot_run_result\":%d,\"cycles\":%lld",
                o.atom_res == 0xffffffffu ? -1 : (int)o.atom_res, o.snap_res == 0xffffffffu ? -1 : (int)o.snap_res, o.cycles);
        if (st.mask != 1u) {
          fprintf(f, ",\"lanes\":[");
          bool lf = true;
          for (int lane = 0; lane < 32; ++lane) {
            if (!((st.mask >> lane) & 1)) continue;
            const LaneOut& l = lo[(s * MAXSTEPS + k) * 32 + lane];
            fprintf(f, "%s{\"lane\":%d", lf ? "" : ",", lane);
            if (op_has_token(st.op)) fprintf(f, ",\"token_hex\":\"0x%016llx\",\"pending_count\":%u", l.tok, l.pc);
            if (op_has_result(st.op)) fprintf(f, ",\"result\":%s", l.res ? "true" : "false");
            fprintf(f, "}");
            lf = false;
          }
          fprintf(f, "]");
        }
        fprintf(f, "}");
        first = false;
      }
    }
  }
  fprintf(f, "\n],\n\"capacity\":[");
  for (size_t ci = 0; ci < caps.size(); ++ci) {
    const Cap& c = caps[ci];
    int changed_live = 0, changed_late = 0, changed_inval = 0;
    for (int i = 0; i < c.nb; ++i) {
      if (c.out[2 * c.nb + i] != c.out[0 * c.nb + i]) changed_live++;
      if (c.out[3 * c.nb + i] != c.out[0 * c.nb + i]) changed_late++;
      if (c.out[4 * c.nb + i] != c.out[0 * c.nb + i]) changed_inval++;
    }
    fprintf(f, "%s\n{\"barriers\":%d,\"stride_bytes\":%d,\"init_count\":%u,\"words_changed_after_arrives\":%d,"
               "\"words_changed_after_sleep\":%d,\"words_changed_after_inval\":%d,",
            ci ? "," : "", c.nb, c.stride, c.count, changed_live, changed_late, changed_inval);
    // run-length encoding of each stage over the barrier index: [first, last, value]
    static const char* stage_names[5] = {"after_init", "token", "after_arrives", "after_sleep", "after_inval"};
    fprintf(f, "\"runs\":{");
    for (int stg = 0; stg < 5; ++stg) {
      fprintf(f, "%s\"%s\":[", stg ? "," : "", stage_names[stg]);
      int start = 0, nruns = 0;
      for (int i = 1; i <= c.nb; ++i) {
        if (i == c.nb || c.out[stg * c.nb + i] != c.out[stg * c.nb + start]) {
          if (nruns < 64) fprintf(f, "%s[%d,%d,\"0x%016llx\"]", nruns ? "," : "", start, i - 1, c.out[stg * c.nb + start]);
          nruns++;
          start = i;
        }
      }
      fprintf(f, "]");
    }
    fprintf(f, "},\"samples\":[");
    int idx[] = {0, 1, 2, 3, c.nb / 2, c.nb - 2, c.nb - 1};
    for (int j = 0; j < 7; ++j) {
      int i = idx[j];
      if (i < 0 || i >= c.nb) continue;
      fprintf(f, "%s{\"index\":%d,\"after_init\":\"0x%016llx\",\"token\":\"0x%016llx\",\"after_arrives\":\"0x%016llx\","
                 "\"after_sleep\":\"0x%016llx\",\"after_inval\":\"0x%016llx\"}",
              j ? "," : "", i, c.out[i], c.out[c.nb + i], c.out[2 * c.nb + i], c.out[3 * c.nb + i], c.out[4 * c.nb + i]);
    }
    fprintf(f, "]}");
  }
  fprintf(f, "\n]\n}\n");
  fclose(f);
  f = nullptr;
  printf("%s: %d sequences written to %s\n", group.c_str(), ns, outpath);
done:
  if (err) {
    // still leave a marker so the run script shows which group failed
    FILE* g = fopen(outpath, "w");
    if (g) { fprintf(g, "{\"error\":\"CUDA error, see log\",\"group\":\"%s\"}\n", group.c_str()); fclose(g); }
  }
  return err;
}
