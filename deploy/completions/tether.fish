function __tether_should_offer_completions_for_flags_or_options -a expected_commands
    set -l non_repeating_flags_or_options $argv[2..]
    set -l non_repeating_flags_or_options_absent 0
    set -l positional_index 0
    set -l commands
    __tether_parse_tokens
    test "$commands" = "$expected_commands"; and return $non_repeating_flags_or_options_absent
end

function __tether_should_offer_completions_for_positional -a expected_commands positional_index_comparison expected_positional_index
    set -l non_repeating_flags_or_options
    set -l non_repeating_flags_or_options_absent 0
    set -l positional_index 0
    set -l commands
    __tether_parse_tokens
    test "$commands" = "$expected_commands" -a \( "$positional_index" "$positional_index_comparison" "$expected_positional_index" \)
end

function __tether_parse_tokens -S
    set -l unparsed_tokens (__tether_tokens -pc)
    switch $unparsed_tokens[1]
    case 'tether'
        __tether_parse_subcommand 0 'h/help'
        switch $unparsed_tokens[1]
        case 'status'
            __tether_parse_subcommand 0 'bus=' 'json' 'h/help'
        case 'devices'
            __tether_parse_subcommand 1 'bus=' 'json' 'h/help'
        case 'scan'
            __tether_parse_subcommand 0 'bus=' 'duration=' 'json' 'h/help'
        case 'pair'
            __tether_parse_subcommand 1 'bus=' 'passkey=' 'yes' 'timeout=' 'json' 'h/help'
        case 'forget'
            __tether_parse_subcommand 1 'bus=' 'h/help'
        case 'settings'
            __tether_parse_subcommand 0 'h/help'
            switch $unparsed_tokens[1]
            case 'get'
                __tether_parse_subcommand 1 'bus=' 'json' 'h/help'
            case 'set'
                __tether_parse_subcommand -r 2 'bus=' 'json' 'h/help'
            end
        case 'outbox'
            __tether_parse_subcommand 0 'h/help'
            switch $unparsed_tokens[1]
            case 'list'
                __tether_parse_subcommand 0 'bus=' 'status=' 'limit=' 'json' 'h/help'
            end
        case 'dead-letters'
            __tether_parse_subcommand 0 'h/help'
            switch $unparsed_tokens[1]
            case 'list'
                __tether_parse_subcommand 0 'bus=' 'limit=' 'json' 'h/help'
            case 'retry'
                __tether_parse_subcommand 1 'bus=' 'all' 'h/help'
            case 'discard'
                __tether_parse_subcommand 1 'bus=' 'all' 'h/help'
            end
        case 'conflicts'
            __tether_parse_subcommand 0 'h/help'
            switch $unparsed_tokens[1]
            case 'list'
                __tether_parse_subcommand 0 'bus=' 'json' 'h/help'
            case 'resolve'
                __tether_parse_subcommand 2 'bus=' 'keep=' 'h/help'
            end
        case 'sync'
            __tether_parse_subcommand 0 'bus=' 'h/help'
        case 'replay'
            __tether_parse_subcommand -r 1 'json' 'db=' 'expect=' 'h/help'
        case 'health'
            __tether_parse_subcommand 0 'h/help'
            switch $unparsed_tokens[1]
            case 'devices'
                __tether_parse_subcommand 0 'bus=' 'json' 'h/help'
            case 'samples'
                __tether_parse_subcommand 1 'bus=' 'metric=' 'since=' 'until=' 'include-deleted' 'limit=' 'json' 'h/help'
            case 'delete'
                __tether_parse_subcommand 1 'bus=' 'note=' 'json' 'h/help'
            case 'correct'
                __tether_parse_subcommand 1 'bus=' 'value=' 'user=' 'note=' 'json' 'h/help'
            case 'deletions'
                __tether_parse_subcommand 1 'bus=' 'limit=' 'json' 'h/help'
            case 'projections'
                __tether_parse_subcommand 0 'bus=' 'device=' 'json' 'h/help'
            case 'watch'
                __tether_parse_subcommand 1 'bus=' 'json' 'h/help'
            case 'backfill'
                __tether_parse_subcommand 1 'bus=' 'json' 'h/help'
            case 'decode'
                __tether_parse_subcommand -r 1 'characteristic=' 'json' 'h/help'
            end
        case 'firmware'
            __tether_parse_subcommand 0 'h/help'
            switch $unparsed_tokens[1]
            case 'inspect'
                __tether_parse_subcommand 1 'keys=' 'json' 'h/help'
            case 'update'
                __tether_parse_subcommand -r 1 'bus=' 'udp=+' 'smp-v1' 'keys=' 'leave-in-test' 'prove-for=' 'max-failures=' 'json' 'h/help'
            case 'updates'
                __tether_parse_subcommand 1 'bus=' 'limit=' 'json' 'h/help'
            case 'list'
                __tether_parse_subcommand -r 1 'udp=' 'smp-v1' 'bus=' 'json' 'h/help'
            case 'echo'
                __tether_parse_subcommand 1 'udp=' 'smp-v1' 'h/help'
            case 'test'
                __tether_parse_subcommand -r 1 'udp=' 'smp-v1' 'bus=' 'h/help'
            case 'confirm'
                __tether_parse_subcommand -r 1 'udp=' 'smp-v1' 'bus=' 'h/help'
            case 'reset'
                __tether_parse_subcommand -r 1 'udp=' 'smp-v1' 'bus=' 'h/help'
            case 'erase'
                __tether_parse_subcommand -r 1 'udp=' 'smp-v1' 'bus=' 'h/help'
            end
        case 'help'
            __tether_parse_subcommand -r 1 
        end
    end
end

function __tether_tokens
    if test (string split -m 1 -f 1 -- . "$FISH_VERSION") -gt 3
        commandline --tokens-raw $argv
    else
        commandline -o $argv
    end
end

function __tether_parse_subcommand -S -a positional_count
    argparse -s r -- $argv
    set -l option_specs $argv[2..]
    set -l is_repeating_positional $_flag_r
    set -el _flag_r
    set -a commands $unparsed_tokens[1]
    set positional_index 0
    while true
        set -e unparsed_tokens[1]
        argparse -sn "$commands" $option_specs -- $unparsed_tokens 2> /dev/null
        set unparsed_tokens $argv
        set positional_index (math $positional_index + 1)
        for non_repeating_flag_or_option in $non_repeating_flags_or_options
            if set -ql "_flag_$(string replace -a - _ -- $non_repeating_flag_or_option)"
                set non_repeating_flags_or_options_absent 1
                break
            end
        end
        test (count $unparsed_tokens) -eq 0 -o \( -z "$is_repeating_positional" -a "$positional_index" -gt "$positional_count" \) && break
    end
end

function __tether_complete_directories
    set -l token (commandline -t)
    string match -- '*/' $token
    set -l subdirs $token*/
    printf %s\n $subdirs
end

function __tether_custom_completion
    set -x SAP_SHELL fish
    set -x SAP_SHELL_VERSION $FISH_VERSION
    set -l tokens (__tether_tokens -p)
    if test -z "$(__tether_tokens -t)"
        set -l index (count (__tether_tokens -pc))
        set tokens $tokens[..$index] \'\' $tokens[(math $index + 1)..]
    end
    command $tokens[1] $argv $tokens
end

complete -c 'tether' -f
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tether' -n '__tether_should_offer_completions_for_positional "tether" -eq 1' -fa 'status' -d 'Show the gateway\'s state: BlueZ, devices, stored events, outbox, sync and storage.'
complete -c 'tether' -n '__tether_should_offer_completions_for_positional "tether" -eq 1' -fa 'devices' -d 'List the devices tetherd knows, or show one in detail.'
complete -c 'tether' -n '__tether_should_offer_completions_for_positional "tether" -eq 1' -fa 'scan' -d 'Scan for devices and show them live: address, name, RSSI, known, paired.'
complete -c 'tether' -n '__tether_should_offer_completions_for_positional "tether" -eq 1' -fa 'pair' -d 'Pair a device and add it to the gateway; asks for the passkey or a confirmation when needed.'
complete -c 'tether' -n '__tether_should_offer_completions_for_positional "tether" -eq 1' -fa 'forget' -d 'Unpair a device and remove it from the gateway (events already stored are kept and still sync).'
complete -c 'tether' -n '__tether_should_offer_completions_for_positional "tether" -eq 1' -fa 'settings' -d 'Read or change a device\'s settings.'
complete -c 'tether' -n '__tether_should_offer_completions_for_positional "tether" -eq 1' -fa 'outbox' -d 'Inspect the outbox: what the gateway still has to send to the backend.'
complete -c 'tether' -n '__tether_should_offer_completions_for_positional "tether" -eq 1' -fa 'dead-letters' -d 'List, retry or discard outbox commands the backend refused for good.'
complete -c 'tether' -n '__tether_should_offer_completions_for_positional "tether" -eq 1' -fa 'conflicts' -d 'List or resolve settings where the gateway\'s desired value and the device\'s disagree.'
complete -c 'tether' -n '__tether_should_offer_completions_for_positional "tether" -eq 1' -fa 'sync' -d 'Ask tetherd to sync with the backend now; \'tether status\' shows the result.'
complete -c 'tether' -n '__tether_should_offer_completions_for_positional "tether" -eq 1' -fa 'replay' -d 'Replay firmware transcripts through the gateway\'s link session and print the outcome.'
complete -c 'tether' -n '__tether_should_offer_completions_for_positional "tether" -eq 1' -fa 'health' -d 'Standard Bluetooth health devices (blood pressure, glucose, CGM, scales, thermometers, oximeters, heart rate).'
complete -c 'tether' -n '__tether_should_offer_completions_for_positional "tether" -eq 1' -fa 'firmware' -d 'Check MCUboot firmware images, and update and manage the images on devices (through tetherd, or over UDP).'
complete -c 'tether' -n '__tether_should_offer_completions_for_positional "tether" -eq 1' -fa 'help' -d 'Show subcommand help information.'
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether status" bus' -l 'bus' -d 'The bus tetherd is on: \'system\' or a D-Bus address (unix:path=...). Default: $TETHER_BUS_ADDRESS, else the system bus.' -rfka ''
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether status" json' -l 'json' -d 'Print the status record as JSON (keys as in docs/specs/control-api.md; times in UTC nanoseconds).'
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether status" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether devices" bus' -l 'bus' -d 'The bus tetherd is on: \'system\' or a D-Bus address (unix:path=...). Default: $TETHER_BUS_ADDRESS, else the system bus.' -rfka ''
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether devices" json' -l 'json' -d 'Print JSON: an array of device records, or one record with a device argument.'
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether devices" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether scan" bus' -l 'bus' -d 'The bus tetherd is on: \'system\' or a D-Bus address (unix:path=...). Default: $TETHER_BUS_ADDRESS, else the system bus.' -rfka ''
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether scan" duration' -l 'duration' -d 'How long to scan, in seconds (0 = until Ctrl-C).' -rfka ''
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether scan" json' -l 'json' -d 'Print each scan result as one JSON line (keys as in docs/specs/control-api.md).'
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether scan" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether pair" bus' -l 'bus' -d 'The bus tetherd is on: \'system\' or a D-Bus address (unix:path=...). Default: $TETHER_BUS_ADDRESS, else the system bus.' -rfka ''
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether pair" passkey' -l 'passkey' -d 'Answer a passkey question with this number (0-999999).' -rfka ''
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether pair" yes' -l 'yes' -d 'Confirm a numeric-comparison question without asking.'
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether pair" timeout' -l 'timeout' -d 'Give up after this many seconds.' -rfka ''
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether pair" json' -l 'json' -d 'Print the paired device\'s record as JSON.'
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether pair" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether forget" bus' -l 'bus' -d 'The bus tetherd is on: \'system\' or a D-Bus address (unix:path=...). Default: $TETHER_BUS_ADDRESS, else the system bus.' -rfka ''
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether forget" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether settings" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tether' -n '__tether_should_offer_completions_for_positional "tether settings" -eq 1' -fa 'get' -d 'Show a device\'s settings: what the gateway wants (desired) and what the device reports.'
complete -c 'tether' -n '__tether_should_offer_completions_for_positional "tether settings" -eq 1' -fa 'set' -d 'Change settings; the device applies them when it is next connected.'
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether settings get" bus' -l 'bus' -d 'The bus tetherd is on: \'system\' or a D-Bus address (unix:path=...). Default: $TETHER_BUS_ADDRESS, else the system bus.' -rfka ''
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether settings get" json' -l 'json' -d 'Print the settings record as JSON (desired.NAME and reported.NAME keys).'
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether settings get" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether settings set" bus' -l 'bus' -d 'The bus tetherd is on: \'system\' or a D-Bus address (unix:path=...). Default: $TETHER_BUS_ADDRESS, else the system bus.' -rfka ''
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether settings set" json' -l 'json' -d 'Print the resulting settings record as JSON.'
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether settings set" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether outbox" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tether' -n '__tether_should_offer_completions_for_positional "tether outbox" -eq 1' -fa 'list' -d 'List outbox commands, oldest first.'
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether outbox list" bus' -l 'bus' -d 'The bus tetherd is on: \'system\' or a D-Bus address (unix:path=...). Default: $TETHER_BUS_ADDRESS, else the system bus.' -rfka ''
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether outbox list" status' -l 'status' -d 'Only commands with this status: pending, in_flight, failed, conflict or dead.' -rfka ''
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether outbox list" limit' -l 'limit' -d 'At most this many commands.' -rfka ''
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether outbox list" json' -l 'json' -d 'Print an array of outbox command records as JSON.'
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether outbox list" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether dead-letters" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tether' -n '__tether_should_offer_completions_for_positional "tether dead-letters" -eq 1' -fa 'list' -d 'List dead letters with the backend\'s last error.'
complete -c 'tether' -n '__tether_should_offer_completions_for_positional "tether dead-letters" -eq 1' -fa 'retry' -d 'Put dead letters back in the outbox; they go out with the next sync.'
complete -c 'tether' -n '__tether_should_offer_completions_for_positional "tether dead-letters" -eq 1' -fa 'discard' -d 'Drop dead letters for good (the backend never gets them).'
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether dead-letters list" bus' -l 'bus' -d 'The bus tetherd is on: \'system\' or a D-Bus address (unix:path=...). Default: $TETHER_BUS_ADDRESS, else the system bus.' -rfka ''
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether dead-letters list" limit' -l 'limit' -d 'At most this many dead letters.' -rfka ''
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether dead-letters list" json' -l 'json' -d 'Print an array of outbox command records as JSON.'
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether dead-letters list" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether dead-letters retry" bus' -l 'bus' -d 'The bus tetherd is on: \'system\' or a D-Bus address (unix:path=...). Default: $TETHER_BUS_ADDRESS, else the system bus.' -rfka ''
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether dead-letters retry" all' -l 'all' -d 'Every dead letter.'
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether dead-letters retry" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether dead-letters discard" bus' -l 'bus' -d 'The bus tetherd is on: \'system\' or a D-Bus address (unix:path=...). Default: $TETHER_BUS_ADDRESS, else the system bus.' -rfka ''
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether dead-letters discard" all' -l 'all' -d 'Every dead letter.'
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether dead-letters discard" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether conflicts" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tether' -n '__tether_should_offer_completions_for_positional "tether conflicts" -eq 1' -fa 'list' -d 'List settings conflicts: mine (desired), theirs (the device\'s) and what both last agreed on.'
complete -c 'tether' -n '__tether_should_offer_completions_for_positional "tether conflicts" -eq 1' -fa 'resolve' -d 'Resolve a conflict: \'mine\' sends the desired value to the device, \'theirs\' keeps the device\'s.'
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether conflicts list" bus' -l 'bus' -d 'The bus tetherd is on: \'system\' or a D-Bus address (unix:path=...). Default: $TETHER_BUS_ADDRESS, else the system bus.' -rfka ''
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether conflicts list" json' -l 'json' -d 'Print an array of conflict records as JSON.'
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether conflicts list" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether conflicts resolve" bus' -l 'bus' -d 'The bus tetherd is on: \'system\' or a D-Bus address (unix:path=...). Default: $TETHER_BUS_ADDRESS, else the system bus.' -rfka ''
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether conflicts resolve" keep' -l 'keep' -d 'Which value wins.' -rfka 'mine theirs'
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether conflicts resolve" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether sync" bus' -l 'bus' -d 'The bus tetherd is on: \'system\' or a D-Bus address (unix:path=...). Default: $TETHER_BUS_ADDRESS, else the system bus.' -rfka ''
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether sync" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether replay" json' -l 'json' -d 'Print JSON instead of tables.'
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether replay" db' -l 'db' -d 'Also store what the gateway stored in this SQLite database (created if missing) and print the rows that resulted. Replaying a transcript again into the same database adds nothing.' -rfka ''
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether replay" expect' -l 'expect' -d 'Compare with an expected-outcome JSON file and exit 1 with a diff on a mismatch. With several transcripts, a directory holding NAME.expected.json for each NAME.transcript.' -rfka ''
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether replay" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether health" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tether' -n '__tether_should_offer_completions_for_positional "tether health" -eq 1' -fa 'devices' -d 'List the health devices tetherd knows: services, connection, samples stored, cursors.'
complete -c 'tether' -n '__tether_should_offer_completions_for_positional "tether health" -eq 1' -fa 'samples' -d 'List stored health samples, newest first.'
complete -c 'tether' -n '__tether_should_offer_completions_for_positional "tether health" -eq 1' -fa 'delete' -d 'Delete a stored health sample, here and on the backend.'
complete -c 'tether' -n '__tether_should_offer_completions_for_positional "tether health" -eq 1' -fa 'correct' -d 'Correct a stored health sample: its value, or the person it belongs to.'
complete -c 'tether' -n '__tether_should_offer_completions_for_positional "tether health" -eq 1' -fa 'deletions' -d 'List deleted and corrected health samples and whether the backend has the deletion.'
complete -c 'tether' -n '__tether_should_offer_completions_for_positional "tether health" -eq 1' -fa 'projections' -d 'List the backend\'s daily rollups of the health samples, as the gateway last pulled them.'
complete -c 'tether' -n '__tether_should_offer_completions_for_positional "tether health" -eq 1' -fa 'watch' -d 'Print live health readings as they arrive, intermediate values included, until interrupted.'
complete -c 'tether' -n '__tether_should_offer_completions_for_positional "tether health" -eq 1' -fa 'backfill' -d 'Read a connected device\'s stored records now (RACP) and say how many were stored.'
complete -c 'tether' -n '__tether_should_offer_completions_for_positional "tether health" -eq 1' -fa 'decode' -d 'Decode a health characteristic value offline, exactly as the gateway does.'
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether health devices" bus' -l 'bus' -d 'The bus tetherd is on: \'system\' or a D-Bus address (unix:path=...). Default: $TETHER_BUS_ADDRESS, else the system bus.' -rfka ''
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether health devices" json' -l 'json' -d 'Print an array of health device records as JSON.'
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether health devices" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether health samples" bus' -l 'bus' -d 'The bus tetherd is on: \'system\' or a D-Bus address (unix:path=...). Default: $TETHER_BUS_ADDRESS, else the system bus.' -rfka ''
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether health samples" metric' -l 'metric' -d 'Only this metric, by name (glucose, blood_pressure_systolic, heart_rate, ...).' -rfka ''
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether health samples" since' -l 'since' -d 'Only samples at or after this time (ISO 8601: 2026-11-24T08:00:00Z or a date).' -rfka ''
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether health samples" until' -l 'until' -d 'Only samples before this time (ISO 8601, as --since).' -rfka ''
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether health samples" include-deleted' -l 'include-deleted' -d 'List deleted and corrected samples too (marked deleted in the UPLOAD column).'
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether health samples" limit' -l 'limit' -d 'At most this many samples.' -rfka ''
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether health samples" json' -l 'json' -d 'Print an array of health sample records as JSON.'
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether health samples" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether health delete" bus' -l 'bus' -d 'The bus tetherd is on: \'system\' or a D-Bus address (unix:path=...). Default: $TETHER_BUS_ADDRESS, else the system bus.' -rfka ''
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether health delete" note' -l 'note' -d 'Why, for the record (sent to the backend with the tombstone; at most 1000 characters).' -rfka ''
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether health delete" json' -l 'json' -d 'Print the tombstone record as JSON.'
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether health delete" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether health correct" bus' -l 'bus' -d 'The bus tetherd is on: \'system\' or a D-Bus address (unix:path=...). Default: $TETHER_BUS_ADDRESS, else the system bus.' -rfka ''
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether health correct" value' -l 'value' -d 'The right value, a plain decimal in the sample\'s unit (120, 5.4).' -rfka ''
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether health correct" user' -l 'user' -d 'The right user index (0-254).' -rfka ''
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether health correct" note' -l 'note' -d 'Why, for the record (sent to the backend with the tombstone; at most 1000 characters).' -rfka ''
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether health correct" json' -l 'json' -d 'Print the tombstone record (with replacement_uid) as JSON.'
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether health correct" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether health deletions" bus' -l 'bus' -d 'The bus tetherd is on: \'system\' or a D-Bus address (unix:path=...). Default: $TETHER_BUS_ADDRESS, else the system bus.' -rfka ''
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether health deletions" limit' -l 'limit' -d 'At most this many.' -rfka ''
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether health deletions" json' -l 'json' -d 'Print an array of health deletion records as JSON.'
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether health deletions" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether health projections" bus' -l 'bus' -d 'The bus tetherd is on: \'system\' or a D-Bus address (unix:path=...). Default: $TETHER_BUS_ADDRESS, else the system bus.' -rfka ''
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether health projections" device' -l 'device' -d 'Only this device (its address or peripheral id).' -rfka ''
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether health projections" json' -l 'json' -d 'Print an array of health projection records as JSON.'
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether health projections" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether health watch" bus' -l 'bus' -d 'The bus tetherd is on: \'system\' or a D-Bus address (unix:path=...). Default: $TETHER_BUS_ADDRESS, else the system bus.' -rfka ''
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether health watch" json' -l 'json' -d 'Print each reading as one JSON line (keys as in docs/specs/control-api.md).'
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether health watch" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether health backfill" bus' -l 'bus' -d 'The bus tetherd is on: \'system\' or a D-Bus address (unix:path=...). Default: $TETHER_BUS_ADDRESS, else the system bus.' -rfka ''
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether health backfill" json' -l 'json' -d 'Print an array of backfill results as JSON.'
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether health backfill" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether health decode" characteristic' -l 'characteristic' -d 'The characteristic: 2A35, 0x2A35 or the full 128-bit UUID; \'sfloat\' or \'float\' for a bare number.' -rfka ''
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether health decode" json' -l 'json' -d 'Print JSON: the decoded fields, the samples, and {"valid": false, "reason": ...} for refused bytes.'
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether health decode" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether firmware" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tether' -n '__tether_should_offer_completions_for_positional "tether firmware" -eq 1' -fa 'inspect' -d 'Show an MCUboot image\'s header, version, hash, signature and key, and whether it verifies.'
complete -c 'tether' -n '__tether_should_offer_completions_for_positional "tether firmware" -eq 1' -fa 'update' -d 'Verify, upload, test, reset and confirm a firmware image on devices (through tetherd, or over UDP).'
complete -c 'tether' -n '__tether_should_offer_completions_for_positional "tether firmware" -eq 1' -fa 'updates' -d 'List the firmware updates tetherd made or is making, newest first.'
complete -c 'tether' -n '__tether_should_offer_completions_for_positional "tether firmware" -eq 1' -fa 'list' -d 'List the images in a device\'s slots: version, hash (the SHA256 TLV) and state.'
complete -c 'tether' -n '__tether_should_offer_completions_for_positional "tether firmware" -eq 1' -fa 'echo' -d 'Ask a device reached over UDP to echo TEXT (is it there?).'
complete -c 'tether' -n '__tether_should_offer_completions_for_positional "tether firmware" -eq 1' -fa 'test' -d 'Mark the image with HASH to run once, on test, at the next reset.'
complete -c 'tether' -n '__tether_should_offer_completions_for_positional "tether firmware" -eq 1' -fa 'confirm' -d 'Confirm the running image (or make the image with HASH permanent).'
complete -c 'tether' -n '__tether_should_offer_completions_for_positional "tether firmware" -eq 1' -fa 'reset' -d 'Reset the device (MCUboot then swaps in an image marked for test or permanent).'
complete -c 'tether' -n '__tether_should_offer_completions_for_positional "tether firmware" -eq 1' -fa 'erase' -d 'Erase the device\'s secondary slot (refused while its image is pending or is the fallback).'
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether firmware inspect" keys' -l 'keys' -d 'Directory of trusted public keys (default /etc/tether/firmware-keys).' -rfka ''
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether firmware inspect" json' -l 'json' -d 'Print the verdict as one JSON object.'
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether firmware inspect" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether firmware update" bus' -l 'bus' -d 'The bus tetherd is on: \'system\' or a D-Bus address (unix:path=...). Default: $TETHER_BUS_ADDRESS, else the system bus.' -rfka ''
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether firmware update"' -l 'udp' -d 'A device\'s SMP UDP address (port 1337 when omitted); repeat for several.' -rfka ''
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether firmware update" smp-v1' -l 'smp-v1' -d 'Speak the original SMP (v1) instead of SMP v2 (with --udp).'
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether firmware update" keys' -l 'keys' -d 'Directory of trusted public keys, with --udp (default /etc/tether/firmware-keys).' -rfka ''
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether firmware update" leave-in-test' -l 'leave-in-test' -d 'Leave the new image on test: MCUboot reverts it at the next reset unless it is confirmed.'
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether firmware update" prove-for' -l 'prove-for' -d 'How long the new image must keep running on test before it is confirmed (0: at once).' -rfka ''
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether firmware update" max-failures' -l 'max-failures' -d 'With several devices: stop after this many failed or reverted.' -rfka ''
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether firmware update" json' -l 'json' -d 'Print each step as one JSON object per line.'
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether firmware update" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether firmware updates" bus' -l 'bus' -d 'The bus tetherd is on: \'system\' or a D-Bus address (unix:path=...). Default: $TETHER_BUS_ADDRESS, else the system bus.' -rfka ''
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether firmware updates" limit' -l 'limit' -d 'At most this many (1 to 1000).' -rfka ''
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether firmware updates" json' -l 'json' -d 'Print an array of update records as JSON.'
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether firmware updates" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether firmware list" udp' -l 'udp' -d 'Reach the device directly at this SMP UDP address (port 1337 when omitted) instead of through tetherd.' -rfka ''
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether firmware list" smp-v1' -l 'smp-v1' -d 'Speak the original SMP (v1) instead of SMP v2 (with --udp).'
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether firmware list" bus' -l 'bus' -d 'The bus tetherd is on: \'system\' or a D-Bus address (unix:path=...). Default: $TETHER_BUS_ADDRESS, else the system bus.' -rfka ''
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether firmware list" json' -l 'json' -d 'Print the slots as one JSON array.'
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether firmware list" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether firmware echo" udp' -l 'udp' -d 'The device\'s SMP UDP address (port 1337 when omitted).' -rfka ''
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether firmware echo" smp-v1' -l 'smp-v1' -d 'Speak the original SMP (v1) instead of SMP v2.'
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether firmware echo" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether firmware test" udp' -l 'udp' -d 'Reach the device directly at this SMP UDP address (port 1337 when omitted) instead of through tetherd.' -rfka ''
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether firmware test" smp-v1' -l 'smp-v1' -d 'Speak the original SMP (v1) instead of SMP v2 (with --udp).'
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether firmware test" bus' -l 'bus' -d 'The bus tetherd is on: \'system\' or a D-Bus address (unix:path=...). Default: $TETHER_BUS_ADDRESS, else the system bus.' -rfka ''
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether firmware test" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether firmware confirm" udp' -l 'udp' -d 'Reach the device directly at this SMP UDP address (port 1337 when omitted) instead of through tetherd.' -rfka ''
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether firmware confirm" smp-v1' -l 'smp-v1' -d 'Speak the original SMP (v1) instead of SMP v2 (with --udp).'
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether firmware confirm" bus' -l 'bus' -d 'The bus tetherd is on: \'system\' or a D-Bus address (unix:path=...). Default: $TETHER_BUS_ADDRESS, else the system bus.' -rfka ''
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether firmware confirm" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether firmware reset" udp' -l 'udp' -d 'Reach the device directly at this SMP UDP address (port 1337 when omitted) instead of through tetherd.' -rfka ''
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether firmware reset" smp-v1' -l 'smp-v1' -d 'Speak the original SMP (v1) instead of SMP v2 (with --udp).'
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether firmware reset" bus' -l 'bus' -d 'The bus tetherd is on: \'system\' or a D-Bus address (unix:path=...). Default: $TETHER_BUS_ADDRESS, else the system bus.' -rfka ''
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether firmware reset" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether firmware erase" udp' -l 'udp' -d 'Reach the device directly at this SMP UDP address (port 1337 when omitted) instead of through tetherd.' -rfka ''
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether firmware erase" smp-v1' -l 'smp-v1' -d 'Speak the original SMP (v1) instead of SMP v2 (with --udp).'
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether firmware erase" bus' -l 'bus' -d 'The bus tetherd is on: \'system\' or a D-Bus address (unix:path=...). Default: $TETHER_BUS_ADDRESS, else the system bus.' -rfka ''
complete -c 'tether' -n '__tether_should_offer_completions_for_flags_or_options "tether firmware erase" h help' -s 'h' -l 'help' -d 'Show help information.'
