// A Verilator C++ testbench that runs a host program through the host port the accelerators share
// (hw/shared/host_port.py), without cocotb: the anchor against which the cocotb harness' speed is measured.
// It makes the accesses of testbench/shared/host_driver.py's HostDriver, cycle for cycle.
//
// Usage: <model> PROGRAM OUTPUT
//
// PROGRAM has one host operation per line (written by testbench/shared/raw_verilator.py, HostProgram):
//   w TARGET ADDRESS HEX    one write, one cycle (consecutive writes are back to back, as HostDriver.write_block)
//   r TARGET ADDRESS        one read; consecutive reads are pipelined, one per cycle (as HostDriver.read_block)
//   s TARGET ADDRESS MAX_CYCLES HEX
//                           the write that starts a run, then cycles until the rising edge of host__done and
//                           one more (as HostDriver.run)
// OUTPUT gets, in program order, "r HEX" per read and "s CYCLES WALL_SECONDS CPU_SECONDS" per run (CYCLES
// counted by this testbench from START to done, WALL_SECONDS from START to the cycle after done, CPU_SECONDS
// the process' CPU time over the same span).
//
// The clock and reset follow testbench/shared/clocking.py: inputs change while the clock is low, two reset
// cycles.  Verilator spells a double underscore in a port's name ___05F (host__write: host___05Fwrite).

#include <chrono>
#include <ctime>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "Vtop.h"
#include "verilated.h"

namespace {

using Words = std::vector<uint32_t>;  // a port value, least significant word first

Words parse_hex(const std::string& hex) {
    Words words;
    for (size_t end = hex.size(); end > 0; end = end > 8 ? end - 8 : 0) {
        const size_t begin = end > 8 ? end - 8 : 0;
        words.push_back(static_cast<uint32_t>(std::stoul(hex.substr(begin, end - begin), nullptr, 16)));
    }
    return words;
}

std::string format_hex(const Words& words) {
    std::string hex;
    char digits[9];
    for (size_t index = words.size(); index-- > 0;) {
        std::snprintf(digits, sizeof digits, "%08x", words[index]);
        hex += digits;
    }
    return hex;
}

template <typename Port>
void set_port(Port& port, const Words& words) {
    if constexpr (VlIsVlWide<Port>::value) {
        for (size_t index = 0; index < Port::Words; ++index) port[index] = index < words.size() ? words[index] : 0;
    } else {
        uint64_t value = 0;
        for (size_t index = 0; index < words.size() && index < 2; ++index) value |= uint64_t(words[index]) << (32 * index);
        port = static_cast<Port>(value);
    }
}

template <typename Port>
Words get_port(const Port& port) {
    if constexpr (VlIsVlWide<Port>::value) {
        return Words(port.data(), port.data() + Port::Words);
    } else {
        const uint64_t value = port;
        return {static_cast<uint32_t>(value), static_cast<uint32_t>(value >> 32)};
    }
}

double cpu_seconds() {
    timespec now{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
    return now.tv_sec + now.tv_nsec * 1e-9;
}

struct Operation {
    char kind;
    uint64_t target, address;
    uint64_t max_cycles;     // s: the run's time-out
    Words data;              // w, s: the word to write
};

std::vector<Operation> read_program(const char* path) {
    std::ifstream file(path);
    if (!file) throw std::runtime_error(std::string("cannot read the host program ") + path);
    std::vector<Operation> program;
    std::string line;
    while (std::getline(file, line)) {
        if (line.empty()) continue;
        std::istringstream fields(line);
        Operation operation{};
        std::string hex;
        fields >> operation.kind >> operation.target >> operation.address;
        if (operation.kind == 's') fields >> operation.max_cycles;
        if (operation.kind != 'r') {
            fields >> hex;
            operation.data = parse_hex(hex);
        }
        if (!fields && operation.kind != 'r') throw std::runtime_error("malformed host operation: " + line);
        program.push_back(std::move(operation));
    }
    return program;
}

class Bench {
  public:
    explicit Bench(VerilatedContext* context) : top_(new Vtop(context, "")) {}
    ~Bench() { top_->final(); }

    // One clock cycle: the rising edge (registers take the inputs set before), then the falling edge.
    // With ``sample``, the read port as it is after the rising edge goes to sample_ and read_valid_.
    void cycle(bool sample = false) {
        top_->clk = 1;
        top_->eval();
        if (sample) {
            sample_ = get_port(top_->host___05Fread_data___05Fpayload);
            read_valid_ = top_->host___05Fread_data___05Fvalid;
        }
        rose_ = top_->host___05Fdone && !done_;
        done_ = top_->host___05Fdone;
        top_->clk = 0;
        top_->eval();
    }

    void reset() {
        top_->host___05Fwrite = 0;
        top_->host___05Fread = 0;
        top_->clk = 0;
        top_->rst = 1;
        top_->eval();
        cycle();
        cycle();
        top_->rst = 0;
        top_->eval();
    }

    void run(std::vector<Operation>::const_iterator operation, std::vector<Operation>::const_iterator end,
             std::FILE* output) {
        while (operation != end) {
            switch (operation->kind) {
                case 'w': operation = write_block(operation, end); break;
                case 'r': operation = read_block(operation, end, output); break;
                case 's': start_and_wait(*operation++, output); break;
                default: throw std::runtime_error(std::string("unknown host operation ") + operation->kind);
            }
        }
    }

  private:
    using Iterator = std::vector<Operation>::const_iterator;

    Iterator write_block(Iterator operation, Iterator end) {
        top_->host___05Fwrite = 1;
        for (; operation != end && operation->kind == 'w'; ++operation) {
            top_->host___05Ftarget = operation->target;
            top_->host___05Faddress = operation->address;
            set_port(top_->host___05Fwrite_data, operation->data);
            cycle();
        }
        top_->host___05Fwrite = 0;
        return operation;
    }

    Iterator read_block(Iterator operation, Iterator end, std::FILE* output) {
        top_->host___05Fread = 1;
        top_->host___05Ftarget = operation->target;
        top_->host___05Faddress = operation->address;
        while (operation != end && operation->kind == 'r') {
            cycle(true);
            ++operation;
            if (operation != end && operation->kind == 'r') {
                top_->host___05Ftarget = operation->target;
                top_->host___05Faddress = operation->address;
            } else {
                top_->host___05Fread = 0;
            }
            if (!read_valid_) throw std::runtime_error("host__read_data__valid was low the cycle after a read");
            std::fprintf(output, "r %s\n", format_hex(sample_).c_str());
        }
        cycle();  // as HostDriver.read_block: one more cycle after the last read's data
        return operation;
    }

    void start_and_wait(const Operation& operation, std::FILE* output) {
        const auto start = std::chrono::steady_clock::now();
        const double cpu_start = cpu_seconds();
        top_->host___05Fwrite = 1;
        top_->host___05Ftarget = operation.target;
        top_->host___05Faddress = operation.address;
        set_port(top_->host___05Fwrite_data, operation.data);
        cycle();
        top_->host___05Fwrite = 0;
        uint64_t cycles = 0;
        do {
            if (++cycles > operation.max_cycles) throw std::runtime_error("done did not rise within MAX_CYCLES");
            cycle();
        } while (!rose_);
        cycle();
        const std::chrono::duration<double> wall = std::chrono::steady_clock::now() - start;
        std::fprintf(output, "s %llu %.9f %.9f\n", static_cast<unsigned long long>(cycles), wall.count(),
                     cpu_seconds() - cpu_start);
    }

    std::unique_ptr<Vtop> top_;
    Words sample_;
    bool read_valid_ = false, done_ = false, rose_ = false;
};

}  // namespace

int main(int argc, char** argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: %s PROGRAM OUTPUT\n", argv[0]);
        return 2;
    }
    try {
        const std::vector<Operation> program = read_program(argv[1]);
        std::FILE* output = std::fopen(argv[2], "w");
        if (!output) throw std::runtime_error(std::string("cannot write ") + argv[2]);
        auto context = std::make_unique<VerilatedContext>();
        {
            Bench bench(context.get());
            bench.reset();
            bench.run(program.cbegin(), program.cend(), output);
        }
        std::fclose(output);
    } catch (const std::exception& error) {
        std::fprintf(stderr, "%s: %s\n", argv[0], error.what());
        return 1;
    }
    return 0;
}
