// The DE1-SoC SDRAM, its controller and the width adapter behind an Avalon-MM slave port, as a simulation model
// that runs inside the simulator.  Cycle-identical at the Avalon port to models/shared/sdram.py: SdramModel
// (waitrequest, readdatavalid and readdata on every cycle; cycle 0 is the first cycle after reset), with the
// same timing parameters (SdramTiming; the defaults are DE1_SOC_SDRAM's).  A testbench model, not hardware.
//
// Ports: clk, rst (synchronous, high); the slave side of an Avalon-MM port with bursts: address (byte address
// of a PORT_BITS-aligned word), burstcount, read, write, writedata, byteenable in; waitrequest, readdata,
// readdatavalid out.  A write burst takes its address and burstcount from its first word; the later words go
// to the following addresses.  The master must follow the protocol (no read and write together, requests held
// under waitrequest); the model does not check it.
//
// How it keeps SdramModel's schedule.  SdramModel is event-driven: accepting an entry (a read burst, a write
// word) schedules all its SDRAM beats at once with timestamp arithmetic.  Here an accepted entry goes into one
// of QUEUE_DEPTH slots (in acceptance order, a ring) and a scheduler takes one step per clock, in acceptance
// order: either one beat (its READ or WRITE command cycle, with the same arithmetic on registers: per-bank open
// row, ACTIVATE cycle and last WRITE, the first free command cycle, the data bus's last read cycle) or one
// refresh.  It never falls behind real time: a beat scheduled on clock p starts no earlier than p (the entry
// was accepted before p and COMMAND_LATENCY >= 1, and the step before ended at least one command or a refresh
// later), so every result is known before it matters:
// * waitrequest on cycle c is "all slots live", a slot being live while its entry is not scheduled yet or its
//   last command is on cycle c or later: SdramModel's "queue of entries whose last command is >= c is full".
//   An entry not scheduled yet has its last command at or after the current clock, so it counts as live.
// * a read word's readdatavalid cycle (its last beat's READ + CAS_LATENCY + READ_RETURN_CYCLES) is at least one
//   clock after the beat was scheduled; the word waits in a FIFO with that cycle until then.
// * memory is read (a read word) or written (a write word, with its byte enables) when the word's last beat is
//   scheduled.  All memory accesses happen in acceptance order, as SdramModel's happen at acceptance, so every
//   read returns what SdramModel returns.
// Refresh.  SdramModel runs a refresh lazily, before the first beat whose earliest start (before its own row
// handling) is at or after the refresh's due cycle.  The scheduler does the same for the beat in hand, one
// refresh per step; and when it has no beat to schedule it runs a refresh as soon as it falls due (eagerly).
// The two agree because a refresh's effect depends only on the state left by the beats and refreshes before
// it: every beat scheduled before it had its earliest start before the due cycle (else the lazy rule in the
// scheduler would have run the refresh first), and every entry accepted later starts after it (accepted on or
// after the clock the scheduler was idle, plus COMMAND_LATENCY >= 1), so SdramModel too runs the refresh
// before it.  The order of beats and refreshes, hence every timestamp, is the same.
//
// Backdoor (testbench access to the memory, see testbench/shared/sdram_backdoor.py): a rising edge on
// backdoor_strobe loads words backdoor_first..backdoor_last from LOAD_FILE ($readmemh) or, with backdoor_dump,
// writes them to DUMP_FILE ($writememh); file names are relative to the simulator's working directory.  The
// backdoor registers are written by the testbench through VPI only; the testbench reads slot_pending to wait until
// every accepted write is in the memory.
//
// FPGA mapping: none; on the board this is the SDRAM chip and Intel's SDRAM controller core.

module sdram_model #(
    parameter integer PORT_BITS = 32,           // Avalon data width, a multiple of DATA_BITS
    parameter integer ADDRESS_BITS = 26,        // Avalon byte address width
    parameter integer BURSTCOUNT_BITS = 8,
    parameter integer DATA_BITS = 16,           // the SDRAM's data width
    parameter integer BANK_BITS = 2,            // log2 of banks
    parameter integer COLUMN_BITS = 10,         // log2 of columns
    parameter integer CAS_LATENCY = 3,
    parameter integer TRCD = 2,
    parameter integer TRP = 2,
    parameter integer TRAS = 5,
    parameter integer TWR = 2,
    parameter integer TRFC = 7,
    parameter integer REFRESH_INTERVAL = 781,
    parameter integer COMMAND_LATENCY = 1,      // >= 1 (see above)
    parameter integer READ_RETURN_CYCLES = 1,
    parameter integer QUEUE_DEPTH = 4,
    parameter integer MEMORY_WORDS_LOG2 = 14,   // the memory holds 2**MEMORY_WORDS_LOG2 PORT_BITS words
    parameter integer RESPONSE_WORDS_LOG2 = 10, // the read word FIFO; >= log2(QUEUE_DEPTH * max burst + CAS + 8)
    parameter LOAD_FILE = "sdram_backdoor_load.hex",
    parameter DUMP_FILE = "sdram_backdoor_dump.hex"
) (
    input wire clk,
    input wire rst,
    input wire [ADDRESS_BITS-1:0] address,
    input wire [BURSTCOUNT_BITS-1:0] burstcount,
    input wire read,
    input wire write,
    input wire [PORT_BITS-1:0] writedata,
    input wire [PORT_BITS/8-1:0] byteenable,
    output wire waitrequest,
    output wire [PORT_BITS-1:0] readdata,
    output wire readdatavalid
);
    localparam integer TIME_BITS = 48;                          // cycles, signed
    localparam signed [TIME_BITS-1:0] LONG_AGO = -(48'sd1 <<< 40);
    localparam integer WORD_BYTES = PORT_BITS / 8;
    localparam integer BEAT_BYTES = DATA_BITS / 8;
    localparam integer BEATS_PER_WORD = PORT_BITS / DATA_BITS;
    localparam integer BANKS = 1 << BANK_BITS;
    localparam integer SLOT_BITS = QUEUE_DEPTH > 1 ? $clog2(QUEUE_DEPTH) : 1;
    localparam integer PART_BITS = BEATS_PER_WORD > 1 ? $clog2(BEATS_PER_WORD) : 1;
    localparam integer WORD_SHIFT = $clog2(WORD_BYTES);
    localparam integer BEAT_SHIFT = $clog2(BEAT_BYTES);
    localparam integer ROW_SHIFT = BEAT_SHIFT + COLUMN_BITS + BANK_BITS;   // byte address -> row
    localparam integer ROW_BITS = ADDRESS_BITS > ROW_SHIFT ? ADDRESS_BITS - ROW_SHIFT : 1;
    // the timing parameters as cycle counts of the timestamps' width
    localparam signed [TIME_BITS-1:0] CYCLES_CAS = TIME_BITS'(CAS_LATENCY);
    localparam signed [TIME_BITS-1:0] CYCLES_RCD = TIME_BITS'(TRCD);
    localparam signed [TIME_BITS-1:0] CYCLES_RP = TIME_BITS'(TRP);
    localparam signed [TIME_BITS-1:0] CYCLES_RAS = TIME_BITS'(TRAS);
    localparam signed [TIME_BITS-1:0] CYCLES_WR = TIME_BITS'(TWR);
    localparam signed [TIME_BITS-1:0] CYCLES_RFC = TIME_BITS'(TRFC);
    localparam signed [TIME_BITS-1:0] CYCLES_REFRESH = TIME_BITS'(REFRESH_INTERVAL);
    localparam signed [TIME_BITS-1:0] CYCLES_COMMAND = TIME_BITS'(COMMAND_LATENCY);
    localparam signed [TIME_BITS-1:0] CYCLES_RETURN = TIME_BITS'(READ_RETURN_CYCLES);
    localparam signed [TIME_BITS-1:0] ONE = 1;

    // ---- cycle count ---------------------------------------------------------------------------------------
    reg signed [TIME_BITS-1:0] cycle;

    // ---- the controller's queue: QUEUE_DEPTH slots in acceptance order (a ring) ------------------------------
    reg [QUEUE_DEPTH-1:0] slot_pending /*verilator public_flat_rd*/;  // accepted, beats not all scheduled (the backdoor
                                                                // waits until none is)
    reg [QUEUE_DEPTH-1:0] slot_scheduled;                       // all beats scheduled, slot_end is known
    reg slot_write [0:QUEUE_DEPTH-1];
    reg [ADDRESS_BITS-1:0] slot_address [0:QUEUE_DEPTH-1];
    reg [BURSTCOUNT_BITS-1:0] slot_words [0:QUEUE_DEPTH-1];
    reg [PORT_BITS-1:0] slot_data [0:QUEUE_DEPTH-1];
    reg [PORT_BITS/8-1:0] slot_enables [0:QUEUE_DEPTH-1];
    reg signed [TIME_BITS-1:0] slot_earliest [0:QUEUE_DEPTH-1]; // acceptance + COMMAND_LATENCY
    reg signed [TIME_BITS-1:0] slot_end [0:QUEUE_DEPTH-1];      // the entry's last command cycle
    reg [SLOT_BITS-1:0] accept_slot;                            // where the next entry goes
    reg [SLOT_BITS-1:0] schedule_slot;                          // the entry being scheduled
    reg [BURSTCOUNT_BITS-1:0] schedule_word;                    // its word being scheduled
    reg [PART_BITS-1:0] schedule_part;                          // and that word's beat

    reg [QUEUE_DEPTH-1:0] slot_live;
    integer s;
    always @* begin
        for (s = 0; s < QUEUE_DEPTH; s = s + 1)
            slot_live[s] = slot_pending[s] || (slot_scheduled[s] && slot_end[s] >= cycle);
    end
    assign waitrequest = &slot_live;
    wire accept = (read || write) && !waitrequest;

    // a write burst in progress: its next word's address and the words still to come
    reg [ADDRESS_BITS-1:0] write_next_address;
    reg [BURSTCOUNT_BITS-1:0] write_words_left;
    wire [ADDRESS_BITS-1:0] write_address = write_words_left != 0 ? write_next_address : address;

    // ---- the SDRAM's state ----------------------------------------------------------------------------------
    reg [BANKS-1:0] bank_open;
    reg [ROW_BITS-1:0] bank_row [0:BANKS-1];
    reg signed [TIME_BITS-1:0] bank_activated [0:BANKS-1];
    reg signed [TIME_BITS-1:0] bank_last_write [0:BANKS-1];
    reg signed [TIME_BITS-1:0] command_free;                   // first cycle the command bus is free
    reg signed [TIME_BITS-1:0] data_bus_read_until;            // last cycle read data is on the data bus
    reg signed [TIME_BITS-1:0] next_refresh;                   // the next refresh's due cycle

    function automatic signed [TIME_BITS-1:0] later(input signed [TIME_BITS-1:0] a, input signed [TIME_BITS-1:0] b);
        later = a > b ? a : b;
    endfunction

    // ---- one scheduler step: a beat of the entry in schedule_slot, or a refresh -----------------------------
    wire busy = slot_pending[schedule_slot];
    wire schedule_write = slot_write[schedule_slot];
    wire [ADDRESS_BITS-1:0] word_address = slot_address[schedule_slot]
        + (ADDRESS_BITS'(schedule_word) << WORD_SHIFT);
    wire [ADDRESS_BITS-1:0] beat_address = word_address + (ADDRESS_BITS'(schedule_part) << BEAT_SHIFT);
    wire [BANK_BITS-1:0] beat_bank = beat_address[BEAT_SHIFT + COLUMN_BITS +: BANK_BITS];
    wire [ROW_BITS-1:0] beat_row = ROW_BITS'(beat_address >> ROW_SHIFT);
    wire signed [TIME_BITS-1:0] beat_earliest = later(slot_earliest[schedule_slot], command_free);
    wire refresh_for_beat = busy && next_refresh <= beat_earliest;
    wire refresh_now = refresh_for_beat || (!busy && next_refresh <= cycle);
    wire schedule_beat = busy && !refresh_for_beat;
    wire last_part = schedule_part == PART_BITS'(BEATS_PER_WORD - 1);
    wire last_word = schedule_word == slot_words[schedule_slot] - 1'b1;

    // the first cycle each bank may be precharged: tRAS after its ACTIVATE, tWR after its last WRITE
    wire signed [TIME_BITS-1:0] precharge_ready [0:BANKS-1];
    genvar g;
    generate
        for (g = 0; g < BANKS; g = g + 1) begin : bank_timing
            assign precharge_ready[g] = later(bank_activated[g] + CYCLES_RAS, bank_last_write[g] + CYCLES_WR);
        end
    endgenerate

    // the refresh: precharge all open banks (each when ready), then tRFC
    reg signed [TIME_BITS-1:0] refresh_begin;
    integer b;
    always @* begin
        refresh_begin = later(next_refresh, command_free);
        for (b = 0; b < BANKS; b = b + 1)
            if (bank_open[b])
                refresh_begin = later(refresh_begin, precharge_ready[b]);
        if (bank_open != 0)
            refresh_begin = refresh_begin + CYCLES_RP;
    end

    // the beat: ACTIVATE (after a PRECHARGE on a row miss) unless its row is open, then READ or WRITE
    wire row_hit = bank_open[beat_bank] && bank_row[beat_bank] == beat_row;
    wire signed [TIME_BITS-1:0] activate_cycle = !bank_open[beat_bank] ? beat_earliest
        : later(beat_earliest, precharge_ready[beat_bank]) + CYCLES_RP;
    wire signed [TIME_BITS-1:0] column_ready = row_hit ? beat_earliest : activate_cycle + CYCLES_RCD;
    wire signed [TIME_BITS-1:0] command_cycle = schedule_write
        ? later(column_ready, data_bus_read_until + ONE) : column_ready;
    wire signed [TIME_BITS-1:0] data_valid_cycle = command_cycle + CYCLES_CAS + CYCLES_RETURN;

    // ---- memory and the read word FIFO ----------------------------------------------------------------------
    reg [PORT_BITS-1:0] memory [0:(1 << MEMORY_WORDS_LOG2)-1];
    wire [MEMORY_WORDS_LOG2-1:0] memory_index = word_address[WORD_SHIFT +: MEMORY_WORDS_LOG2];

    reg [PORT_BITS-1:0] response_data [0:(1 << RESPONSE_WORDS_LOG2)-1];
    reg signed [TIME_BITS-1:0] response_cycle [0:(1 << RESPONSE_WORDS_LOG2)-1];
    reg [RESPONSE_WORDS_LOG2:0] response_head, response_tail;
    reg [PORT_BITS-1:0] last_readdata;                         // readdata holds the last word between words
    wire response_now = response_head != response_tail
        && response_cycle[response_head[RESPONSE_WORDS_LOG2-1:0]] == cycle;
    assign readdatavalid = response_now;
    assign readdata = response_now ? response_data[response_head[RESPONSE_WORDS_LOG2-1:0]] : last_readdata;

    function automatic [SLOT_BITS-1:0] next_slot(input [SLOT_BITS-1:0] slot);
        next_slot = slot == SLOT_BITS'(QUEUE_DEPTH - 1) ? {SLOT_BITS{1'b0}} : slot + 1'b1;
    endfunction

    integer i;
    always @(posedge clk) begin
        if (rst) begin
            cycle <= 0;
            slot_pending <= 0;
            slot_scheduled <= 0;
            accept_slot <= 0;
            schedule_slot <= 0;
            schedule_word <= 0;
            schedule_part <= 0;
            write_words_left <= 0;
            bank_open <= 0;
            for (i = 0; i < BANKS; i = i + 1) begin
                bank_activated[i] <= LONG_AGO;
                bank_last_write[i] <= LONG_AGO;
            end
            command_free <= 0;
            data_bus_read_until <= -1;
            next_refresh <= CYCLES_REFRESH;
            response_head <= 0;
            response_tail <= 0;
            last_readdata <= 0;
        end else begin
            cycle <= cycle + ONE;
            // the Avalon side: a read burst or a write word enters the queue
            if (accept) begin
                slot_pending[accept_slot] <= 1'b1;
                slot_scheduled[accept_slot] <= 1'b0;
                slot_write[accept_slot] <= write;
                slot_address[accept_slot] <= write ? write_address : address;
                slot_words[accept_slot] <= write ? BURSTCOUNT_BITS'(1) : burstcount;
                slot_data[accept_slot] <= writedata;
                slot_enables[accept_slot] <= byteenable;
                slot_earliest[accept_slot] <= cycle + CYCLES_COMMAND;
                accept_slot <= next_slot(accept_slot);
                if (write) begin
                    write_next_address <= write_address + ADDRESS_BITS'(WORD_BYTES);
                    write_words_left <= write_words_left != 0 ? write_words_left - 1'b1 : burstcount - 1'b1;
                end
            end
            // the scheduler
            if (refresh_now) begin
                bank_open <= 0;
                command_free <= refresh_begin + CYCLES_RFC;
                next_refresh <= next_refresh + CYCLES_REFRESH;
            end else if (schedule_beat) begin
                if (!row_hit) begin
                    bank_open[beat_bank] <= 1'b1;
                    bank_row[beat_bank] <= beat_row;
                    bank_activated[beat_bank] <= activate_cycle;
                end
                if (schedule_write)
                    bank_last_write[beat_bank] <= command_cycle;
                else
                    data_bus_read_until <= command_cycle + CYCLES_CAS;
                command_free <= command_cycle + ONE;
                schedule_part <= last_part ? {PART_BITS{1'b0}} : schedule_part + 1'b1;
                if (last_part) begin
                    if (schedule_write) begin
                        for (i = 0; i < WORD_BYTES; i = i + 1)
                            if (slot_enables[schedule_slot][i])
                                memory[memory_index][8 * i +: 8] <= slot_data[schedule_slot][8 * i +: 8];
                    end else begin
                        response_data[response_tail[RESPONSE_WORDS_LOG2-1:0]] <= memory[memory_index];
                        response_cycle[response_tail[RESPONSE_WORDS_LOG2-1:0]] <= data_valid_cycle;
                        response_tail <= response_tail + 1'b1;
                    end
                    schedule_word <= last_word ? {BURSTCOUNT_BITS{1'b0}} : schedule_word + 1'b1;
                    if (last_word) begin
                        slot_pending[schedule_slot] <= 1'b0;
                        slot_scheduled[schedule_slot] <= 1'b1;
                        slot_end[schedule_slot] <= command_cycle;
                        schedule_slot <= next_slot(schedule_slot);
                    end
                end
            end
            // the read word FIFO
            if (response_now) begin
                last_readdata <= response_data[response_head[RESPONSE_WORDS_LOG2-1:0]];
                response_head <= response_head + 1'b1;
            end
        end
    end

    // ---- the backdoor ---------------------------------------------------------------------------------------
    // Written by the testbench through VPI, never by this model: public, and waived from the lint check's
    // "undriven" finding for that reason.
    /* verilator lint_off UNDRIVEN */
    reg backdoor_strobe /*verilator public_flat_rw*/;
    reg backdoor_dump /*verilator public_flat_rw*/;
    reg [MEMORY_WORDS_LOG2-1:0] backdoor_first /*verilator public_flat_rw*/;
    reg [MEMORY_WORDS_LOG2-1:0] backdoor_last /*verilator public_flat_rw*/;
    /* verilator lint_on UNDRIVEN */

    always @(posedge backdoor_strobe) begin
        if (backdoor_dump)
            $writememh(DUMP_FILE, memory, backdoor_first, backdoor_last);
        else
            $readmemh(LOAD_FILE, memory, backdoor_first, backdoor_last);
    end

    // The memory starts as zeros, as SdramModel's does.
    initial begin
        for (i = 0; i < (1 << MEMORY_WORDS_LOG2); i = i + 1)
            memory[i] = {PORT_BITS{1'b0}};
    end
endmodule
