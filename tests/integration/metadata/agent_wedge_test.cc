// A wedged worker thread makes /healthz fail, end to end (issue 27's fault matrix, "the agent"):
// the real agent binary on a real OVN chassis, its OVSDB IDL thread ("okna-ovsdb") and its
// namespace worker ("okna-netns-work") stopped from outside while every other thread runs on,
// then let go.
//
// How a thread is wedged for real, with no hook in the agent: the test (root) ptrace-seizes that
// one thread of the agent and interrupts it (PTRACE_SEIZE + PTRACE_INTERRUPT stop only the
// traced thread, unlike SIGSTOP, which stops the whole process). The thread then sits in a
// ptrace stop exactly as a thread blocked forever in a syscall would: it beats no heartbeat
// while the event loop and the health listener go on answering. PTRACE_DETACH lets it run again.
#include <sys/ptrace.h>
#include <sys/wait.h>

#include "tests/integration/metadata/agent_metadata_fixture.h"

namespace okna {
namespace {

using namespace metadata_e2e;
using namespace std::chrono_literals;

// The thread of `pid` whose name (comm) is `name`, or 0.
pid_t threadNamed(pid_t pid, const std::string& name) {
  const fs::path tasks = "/proc/" + std::to_string(pid) + "/task";
  std::error_code ec;
  for (const auto& t : fs::directory_iterator(tasks, ec)) {
    std::ifstream in(t.path() / "comm");
    std::string comm;
    std::getline(in, comm);
    if (comm == name) return static_cast<pid_t>(std::stol(t.path().filename().string()));
  }
  return 0;
}

// One thread held in a ptrace stop for as long as this lives.
class WedgedThread {
 public:
  explicit WedgedThread(pid_t tid) : tid_(tid) {
    if (::ptrace(PTRACE_SEIZE, tid_, nullptr, nullptr) != 0)
      throw std::runtime_error("PTRACE_SEIZE " + std::to_string(tid_) + ": " +
                               std::strerror(errno));
    if (::ptrace(PTRACE_INTERRUPT, tid_, nullptr, nullptr) != 0)
      throw std::runtime_error("PTRACE_INTERRUPT: " + std::string(std::strerror(errno)));
    int status = 0;
    if (::waitpid(tid_, &status, __WALL) != tid_ || !WIFSTOPPED(status))
      throw std::runtime_error("thread " + std::to_string(tid_) + " did not stop");
  }
  ~WedgedThread() { release(); }
  WedgedThread(const WedgedThread&) = delete;
  WedgedThread& operator=(const WedgedThread&) = delete;
  void release() {
    if (tid_ != 0) ::ptrace(PTRACE_DETACH, tid_, nullptr, nullptr);
    tid_ = 0;
  }

 private:
  pid_t tid_;
};

TEST_F(AgentMetadataTest, AWedgedIdlThreadOrNamespaceWorkerFailsHealthzWhileTheRestAnswers) {
  chassis_->add_network(kNet1, "10.0.0.0/24");
  const auto vm1 = chassis_->add_vm(kNet1, "vm1", "10.0.0.11", "fa:16:3e:00:e2:11");
  startAgent();
  EXPECT_EQ(metaData(vm1.netns).value("uuid", ""), vm1.device_id);
  ASSERT_EQ(agent_->get("/healthz").status, 200) << agent_->get("/healthz?verbose").body;

  const pid_t pid = agent_->process().pid();
  const pid_t idl = threadNamed(pid, "okna-ovsdb");
  const pid_t worker = threadNamed(pid, "okna-netns-work");
  ASSERT_NE(idl, 0) << "no thread named okna-ovsdb in the agent";
  ASSERT_NE(worker, 0) << "no thread named okna-netns-work in the agent";
  const auto healthz = [&] { return agent_->get("/healthz?verbose"); };
  const auto failsNaming = [&](const std::string& heartbeat) {
    const auto r = healthz();
    return r.status == 500 &&
           r.body.find("[-]" + heartbeat + " failed: last beat") != std::string::npos;
  };

  {
    // Both wedged at once: the IDL thread's heartbeat allows 10 s of silence, the worker's 30 s.
    WedgedThread stuckIdl(idl);
    WedgedThread stuckWorker(worker);
    EXPECT_TRUE(waitFor([&] { return failsNaming("ovsdb-idl"); }, 30s)) << healthz().body;
    EXPECT_TRUE(waitFor([&] { return failsNaming("netns-worker"); }, 50s)) << healthz().body;
    // The rest of the agent answers: the health listener (above) and /metrics on the loop.
    EXPECT_EQ(agent_->adminGet("/metrics").status, 200);
    EXPECT_TRUE(agent_->process().running());
  }
  // Let go: healthy again, serving as before.
  EXPECT_TRUE(waitFor([&] { return healthz().status == 200; }, 20s)) << healthz().body;
  EXPECT_EQ(metaData(vm1.netns).value("uuid", ""), vm1.device_id);
}

}  // namespace
}  // namespace okna
