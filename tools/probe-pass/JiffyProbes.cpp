/*
 * JiffyProbes.cpp - an LLVM 14 pass plugin that inserts Jiffy's preemption probe into C and C++.
 *
 * Owns: where probes go (placement rules below), the probe's code (exactly jf_safepoint()'s fast
 * path from include/jiffy/preempt.h, emitted inline) and the -mllvm options that tune both. The
 * runtime is untouched: a probe is a safepoint the programmer did not have to write, so every
 * mechanism that reads jf__preempt.poll ("safepoint", "deadline", "hybrid") preempts at it.
 *
 * The probe, at an insertion point P:
 *     when = asm sideeffect "movq jf__preempt@gottpoff(%rip), %rax; movq %fs:8(%rax), $0"
 *     if (when != 0)                      -- weighted 1:2000, the cold block is out of line
 *         if (--jf__preempt.probe_left <= 0)  -- inline asm on the TLS word at offset 16
 *             jf__probe_armed();          -- reads the TSC, preempts if due (keeps errno; defers
 *                                            inside jf_preempt_disable()), sets the next count
 * The count keeps the TSC off the armed path: while work waits, an rdtsc at every iteration of
 * a tight loop made it 4.5-7x slower; the runtime now reads it a few times per quantum
 * (jf__probe_armed in src/runtime/preempt/preempt.c).
 * Invariant 1: the TLS address is recomputed by every probe (the asm is volatile and clobbers
 * rax), never cached across a call: a uthread can resume on another kernel thread after any
 * call, and a cached %fs-relative address would read the old worker's word.
 * Invariant 2: Jiffy itself is never instrumented (it is built without the plugin, and functions
 * named jf_* / jf__* or placed in a .text.jiffy* section are skipped), so a probe never runs
 * inside the runtime or with the runtime's own state half-updated.
 *
 * Placement (docs/probes.md has the reasoning and the measurements):
 *   - loops: a probe at the top of every latch (the block with the back-edge; or right before
 *     its branch, -jiffy-probe-latch-at=end) of every loop, except loop nests SCEV proves short: a loop whose max trip count times (1 +
 *     the bounds of its unprobed inner loops) is at most -jiffy-probe-small-trip (64) runs
 *     without one; its enclosing loop, or the caller, covers it.
 *   - function entry: only in functions that contain a call that can lead back to user code
 *     (not an intrinsic, not a known C library function without a function argument, not a
 *     leaf defined in the same module), so that recursion and long call chains poll; leaves
 *     without loops and calls get nothing.
 *   - optional: in tiny innermost loops, a counter so the probe runs every N iterations.
 *   - skipped functions: declarations, available_externally bodies, naked functions, names jf_* (so jf__* too),
 *     a section named .text.jiffy*, and __attribute__((annotate("jiffy_no_probe"))).
 * The pass runs at OptimizerLast (also at -O0, where LLVM 14 invokes the same callback), so
 * probes land on the final unrolled and vectorized loops and never block those transformations.
 */
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Analysis/LoopInfo.h"
#include "llvm/Analysis/ScalarEvolution.h"
#include "llvm/Analysis/TargetLibraryInfo.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/InlineAsm.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Intrinsics.h"
#include "llvm/IR/MDBuilder.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PassManager.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Passes/PassPlugin.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Transforms/Utils/BasicBlockUtils.h"

using namespace llvm;

namespace {

enum class EntryMode { None, Calls, All };

cl::opt<bool> ProbesOn("jiffy-probes", cl::init(true),
		       cl::desc("Jiffy: insert preemption probes (false: the pass does nothing)"));

cl::opt<unsigned> SmallTrip(
	"jiffy-probe-small-trip", cl::init(64),
	cl::desc("Jiffy: leave a loop without a probe when SCEV bounds its nest (max trip count "
		 "times 1 + its unprobed inner loops' bounds) by this many iterations; 0: probe "
		 "every loop"));

cl::opt<EntryMode> EntryProbes(
	"jiffy-probe-entry", cl::init(EntryMode::Calls),
	cl::desc("Jiffy: which functions get a probe at entry"),
	cl::values(clEnumValN(EntryMode::None, "none", "no function"),
		   clEnumValN(EntryMode::Calls, "calls",
			      "functions containing a call that can reach user code (default)"),
		   clEnumValN(EntryMode::All, "all", "every instrumented function")));

enum class LatchAt { Top, End };

cl::opt<LatchAt> LatchPosition(
	"jiffy-probe-latch-at", cl::init(LatchAt::Top),
	cl::desc("Jiffy: where in a latch block the probe goes"),
	cl::values(clEnumValN(LatchAt::Top, "top",
			      "before the block's first instruction (default: the block's own "
			      "compare and branch stay together, so the backend keeps them fused)"),
		   clEnumValN(LatchAt::End, "end", "right before the back-edge branch")));

cl::opt<unsigned> ProbeEvery(
	"jiffy-probe-every", cl::init(1),
	cl::desc("Jiffy: in innermost loops of at most -jiffy-probe-tiny-body instructions, probe "
		 "every N iterations with a counter (a power of two; 1: every iteration)"));

cl::opt<unsigned> TinyBody("jiffy-probe-tiny-body", cl::init(16),
			   cl::desc("Jiffy: instructions in an innermost loop that -jiffy-probe-every "
				    "treats as tiny"));

cl::opt<bool> Report("jiffy-probe-report", cl::init(false),
		     cl::desc("Jiffy: print one line per function to stderr: probes placed, loops "
			      "left without one"));

constexpr const char *OptOutAnnotation = "jiffy_no_probe";
constexpr const char *SkippedSection = ".text.jiffy";
constexpr const char *ArmedPath = "jf__probe_armed";

/* The functions that carry __attribute__((annotate("jiffy_no_probe"))). */
SmallPtrSet<const Function *, 8> optedOut(Module &M)
{
	SmallPtrSet<const Function *, 8> out;
	GlobalVariable *GA = M.getNamedGlobal("llvm.global.annotations");
	auto *Arr = GA && GA->hasInitializer() ? dyn_cast<ConstantArray>(GA->getInitializer())
					       : nullptr;
	if (!Arr)
		return out;
	for (const Use &U : Arr->operands()) {
		auto *Entry = dyn_cast<ConstantStruct>(U.get());
		if (!Entry || Entry->getNumOperands() < 2)
			continue;
		auto *F = dyn_cast<Function>(Entry->getOperand(0)->stripPointerCasts());
		auto *Str = dyn_cast<GlobalVariable>(Entry->getOperand(1)->stripPointerCasts());
		auto *Data = Str && Str->hasInitializer()
				     ? dyn_cast<ConstantDataSequential>(Str->getInitializer())
				     : nullptr;
		if (F && Data && Data->isCString() && Data->getAsCString() == OptOutAnnotation)
			out.insert(F);
	}
	return out;
}

bool skipped(const Function &F, const SmallPtrSetImpl<const Function *> &OptOut)
{
	return F.isDeclaration() || F.hasAvailableExternallyLinkage() ||
	       F.hasFnAttribute(Attribute::Naked) || F.getName().startswith("jf_") ||
	       (F.hasSection() && F.getSection().startswith(SkippedSection)) || OptOut.count(&F);
}

/*
 * Whether the call @CB cannot lead back to user code: an intrinsic or inline asm, a C library
 * function the target knows (strlen, memcpy, printf) given no function (qsort's comparator is
 * user code), or a function defined here, not replaceable at link time, that makes no call but
 * such calls itself (a leaf: it cannot recurse, and its loops have their own probes).
 */
bool closedCall(const CallBase &CB, const TargetLibraryInfo &TLI, bool allowLeaf);

bool callsOnlyClosed(const Function &F, const TargetLibraryInfo &TLI, bool allowLeaf)
{
	for (const Instruction &I : instructions(F))
		if (auto *CB = dyn_cast<CallBase>(&I); CB && !closedCall(*CB, TLI, allowLeaf))
			return false;
	return true;
}

bool closedCall(const CallBase &CB, const TargetLibraryInfo &TLI, bool allowLeaf)
{
	if (CB.isInlineAsm())
		return true;
	const Function *Callee = CB.getCalledFunction();
	if (!Callee)
		return false; /* indirect */
	if (Callee->isIntrinsic() || Callee->getName() == ArmedPath)
		return true; /* the probe's own call (in functions instrumented before this one) */
	for (const Use &A : CB.args())
		if (isa<Function>(A->stripPointerCasts()))
			return false;
	LibFunc LF;
	if (TLI.getLibFunc(*Callee, LF) && TLI.has(LF))
		return true;
	/* One level: a leaf's own calls must be closed without leaves (no recursion here). */
	return allowLeaf && !Callee->isDeclaration() && !Callee->isInterposable() &&
	       callsOnlyClosed(*Callee, TLI, false);
}

/* Whether @F contains a call through which recursion or an unbounded call chain can pass. */
bool hasUserCall(const Function &F, const TargetLibraryInfo &TLI)
{
	return !callsOnlyClosed(F, TLI, true);
}

uint64_t satMul(uint64_t a, uint64_t b)
{
	return b && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

struct LoopPlan {
	SmallVector<Loop *, 8> probed;
	unsigned leftShort = 0; /* loops SCEV bounded, left without a probe */
};

/*
 * Decide for @L and its inner loops, innermost first. Return: the bound on body executions of
 * @L's nest that run without a probe, 0 when @L itself gets one.
 */
uint64_t planLoop(Loop *L, ScalarEvolution &SE, LoopPlan &Plan)
{
	uint64_t inner = 0;
	for (Loop *Sub : L->getSubLoops()) {
		inner += planLoop(Sub, SE, Plan);
		if (inner > UINT64_MAX / 2)
			inner = UINT64_MAX / 2;
	}
	uint64_t trips = SE.getSmallConstantMaxTripCount(L); /* 0: unknown */
	uint64_t bound = satMul(trips, 1 + inner);
	if (SmallTrip && trips && bound <= SmallTrip) {
		Plan.leftShort++;
		return bound;
	}
	Plan.probed.push_back(L);
	return 0;
}

unsigned loopSize(const Loop *L)
{
	unsigned n = 0;
	for (const BasicBlock *BB : L->blocks())
		n += BB->sizeWithoutDebug();
	return n;
}

/* Where a function-entry probe goes: after the entry block's static allocas (which must stay in
 * the entry block to remain part of the fixed frame). */
Instruction *entryPoint(Function &F)
{
	BasicBlock &E = F.getEntryBlock();
	for (Instruction &I : E) {
		if (isa<PHINode>(I) || isa<DbgInfoIntrinsic>(I))
			continue;
		if (auto *A = dyn_cast<AllocaInst>(&I); A && A->isStaticAlloca())
			continue;
		return &I;
	}
	return E.getTerminator();
}

/* Where a latch probe goes (-jiffy-probe-latch-at); null: nowhere (an exception-handling pad). */
Instruction *latchPoint(BasicBlock *Latch)
{
	if (Latch->getTerminator()->isEHPad())
		return nullptr;
	return LatchPosition == LatchAt::Top ? &*Latch->getFirstInsertionPt()
					     : Latch->getTerminator();
}

class ProbeEmitter {
public:
	explicit ProbeEmitter(Module &M)
	{
		LLVMContext &C = M.getContext();
		Type *I64 = Type::getInt64Ty(C);
		/* The same asm, constraints and clobbers as clang-14 makes of jf_safepoint(). */
		LoadPoll = InlineAsm::get(FunctionType::get(I64, false),
					  "movq jf__preempt@gottpoff(%rip), %rax\n\t"
					  "movq %fs:8(%rax), $0",
					  "=r,~{rax},~{dirflag},~{fpsr},~{flags}", /*sideeffect=*/true);
		/* jf__preempt.probe_left -= 1, fresh TLS address (as LoadPoll); the new value. */
		CountDown = InlineAsm::get(FunctionType::get(I64, false),
					   "movq jf__preempt@gottpoff(%rip), %rax\n\t"
					   "subq $$1, %fs:16(%rax)\n\t"
					   "movq %fs:16(%rax), $0",
					   "=r,~{rax},~{dirflag},~{fpsr},~{flags},~{memory}",
					   /*sideeffect=*/true);
		ArmedFn = M.getOrInsertFunction(ArmedPath,
					      FunctionType::get(Type::getVoidTy(C), false));
		if (auto *F = dyn_cast<Function>(ArmedFn.getCallee())) {
			F->addFnAttr(Attribute::NoUnwind);
			F->addFnAttr(Attribute::Cold);
		}
		Unlikely = MDBuilder(C).createBranchWeights(1, 2000);
	}

	/* The probe, before @Before (which stays where it is, in the continuation block). */
	void emit(Instruction *Before, MDNode *Weights = nullptr)
	{
		IRBuilder<> B(Before);
		CallInst *When = B.CreateCall(FunctionType::get(B.getInt64Ty(), false), LoadPoll,
					      {}, "jf.poll");
		When->addFnAttr(Attribute::NoUnwind);
		Value *Armed = B.CreateICmpNE(When, B.getInt64(0), "jf.armed");
		Instruction *Cold =
			SplitBlockAndInsertIfThen(Armed, Before, false, Weights ? Weights : Unlikely);
		Cold->getParent()->setName("jf.probe.cold");
		Before->getParent()->setName("jf.probe.cont");
		/* Armed: count down (include/jiffy/preempt.h, probe_left); at 0 the runtime reads
		 * the TSC, preempts if due, and sets the next count (jf__probe_armed). */
		IRBuilder<> C(Cold);
		CallInst *Left = C.CreateCall(FunctionType::get(C.getInt64Ty(), false), CountDown,
					      {}, "jf.left");
		Left->addFnAttr(Attribute::NoUnwind);
		Value *Look = C.CreateICmpSLE(Left, C.getInt64(0), "jf.look");
		Instruction *Call = SplitBlockAndInsertIfThen(Look, Cold, false);
		Call->getParent()->setName("jf.probe.slow");
		IRBuilder<> S(Call);
		S.CreateCall(ArmedFn)->addFnAttr(Attribute::NoUnwind);
	}

	/*
	 * A probe on @L's back-edge that runs every @Every-th iteration: a counter in the header,
	 * incremented in the latch; the probe runs when its low bits wrap to 0.
	 */
	void emitCounted(Loop *L, BasicBlock *Latch, unsigned Every)
	{
		BasicBlock *H = L->getHeader();
		Type *I32 = Type::getInt32Ty(H->getContext());
		PHINode *Cnt = PHINode::Create(I32, 2, "jf.iter", &H->front());
		IRBuilder<> B(Latch->getTerminator());
		Value *Next = B.CreateAdd(Cnt, B.getInt32(1), "jf.iter.next");
		Value *Hit = B.CreateICmpEQ(B.CreateAnd(Next, B.getInt32(Every - 1)), B.getInt32(0),
					    "jf.iter.hit");
		for (BasicBlock *P : predecessors(H))
			Cnt->addIncoming(P == Latch ? Next : ConstantInt::get(I32, 0), P);
		MDNode *W = MDBuilder(H->getContext()).createBranchWeights(1, Every - 1);
		Instruction *Then = SplitBlockAndInsertIfThen(Hit, Latch->getTerminator(), false, W);
		Then->getParent()->setName("jf.probe.every");
		emit(Then);
	}

private:
	InlineAsm *LoadPoll, *CountDown;
	FunctionCallee ArmedFn;
	MDNode *Unlikely;
};

struct FunctionCounts {
	unsigned latch = 0, counted = 0, entry = 0, leftShort = 0;
};

FunctionCounts instrument(Function &F, FunctionAnalysisManager &FAM, ProbeEmitter &Emit)
{
	FunctionCounts N;
	LoopInfo &LI = FAM.getResult<LoopAnalysis>(F);
	ScalarEvolution &SE = FAM.getResult<ScalarEvolutionAnalysis>(F);
	const TargetLibraryInfo &TLI = FAM.getResult<TargetLibraryAnalysis>(F);

	LoopPlan Plan;
	for (Loop *L : LI)
		planLoop(L, SE, Plan);
	N.leftShort = Plan.leftShort;
	bool entry = EntryProbes == EntryMode::All ||
		     (EntryProbes == EntryMode::Calls && hasUserCall(F, TLI));

	/* Decide everything first: the loop analyses are stale once the first block is split. */
	struct Site {
		Instruction *before;
		Loop *countedLoop; /* non-null: a counted probe on this single-latch loop */
	};
	SmallVector<Site, 16> Sites;
	SmallPtrSet<Instruction *, 16> Seen; /* a block can be a latch of two loops */
	bool counting = ProbeEvery > 1;
	for (Loop *L : Plan.probed) {
		SmallVector<BasicBlock *, 4> Latches;
		L->getLoopLatches(Latches);
		if (counting && L->isInnermost() && Latches.size() == 1 &&
		    loopSize(L) <= TinyBody && Seen.insert(Latches[0]->getTerminator()).second) {
			Sites.push_back({Latches[0]->getTerminator(), L});
			continue;
		}
		for (BasicBlock *Latch : Latches)
			if (Instruction *At = latchPoint(Latch); At && Seen.insert(At).second)
				Sites.push_back({At, nullptr});
	}
	Instruction *EntryAt = entry ? entryPoint(F) : nullptr;

	for (const Site &S : Sites) {
		if (S.countedLoop) {
			Emit.emitCounted(S.countedLoop, S.before->getParent(), ProbeEvery);
			N.counted++;
		} else {
			Emit.emit(S.before);
			N.latch++;
		}
	}
	if (EntryAt) {
		Emit.emit(EntryAt);
		N.entry++;
	}
	return N;
}

struct JiffyProbesPass : PassInfoMixin<JiffyProbesPass> {
	PreservedAnalyses run(Module &M, ModuleAnalysisManager &MAM)
	{
		if (!ProbesOn)
			return PreservedAnalyses::all();
		if (ProbeEvery == 0 || (ProbeEvery & (ProbeEvery - 1)))
			report_fatal_error("jiffy-probe-every must be a power of two (got " +
					   Twine(ProbeEvery) + ")");
		auto &FAM = MAM.getResult<FunctionAnalysisManagerModuleProxy>(M).getManager();
		auto OptOut = optedOut(M);
		ProbeEmitter Emit(M);
		bool changed = false;
		for (Function &F : M) {
			if (skipped(F, OptOut))
				continue;
			FunctionCounts N = instrument(F, FAM, Emit);
			bool fChanged = N.latch || N.counted || N.entry;
			if (fChanged)
				FAM.invalidate(F, PreservedAnalyses::none());
			changed |= fChanged;
			if (Report)
				errs() << "jiffy-probes: " << F.getName() << ": latch " << N.latch
				       << " counted " << N.counted << " entry " << N.entry
				       << " short-loops " << N.leftShort << "\n";
		}
		return changed ? PreservedAnalyses::none() : PreservedAnalyses::all();
	}
	/* Also at -O0, where every function is optnone. */
	static bool isRequired() { return true; }
};

} // namespace

extern "C" LLVM_ATTRIBUTE_WEAK PassPluginLibraryInfo llvmGetPassPluginInfo()
{
	return {LLVM_PLUGIN_API_VERSION, "JiffyProbes", "0.1", [](PassBuilder &PB) {
			PB.registerOptimizerLastEPCallback(
				[](ModulePassManager &MPM, OptimizationLevel) {
					MPM.addPass(JiffyProbesPass());
				});
			/* opt-14 -load-pass-plugin=JiffyProbes.so -passes=jiffy-probes */
			PB.registerPipelineParsingCallback(
				[](StringRef Name, ModulePassManager &MPM,
				   ArrayRef<PassBuilder::PipelineElement>) {
					if (Name != "jiffy-probes")
						return false;
					MPM.addPass(JiffyProbesPass());
					return true;
				});
		}};
}
