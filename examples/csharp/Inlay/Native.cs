// Native.cs: the C ABI of include/inlay/inlay.h as P/Invoke declarations. The structs
// repeat inlay.h's field by field (names as in C, so that the layout check in Tests.cs
// can compare every offset with struct_layout.c's offsetof); params structs are
// initialised by the library's *_params_init_size with Marshal.SizeOf of these copies.
using System;
using System.Runtime.InteropServices;

namespace Inlay
{
    internal static class Native
    {
        // "inlay" resolves to libinlay.so.1 through Inlay.dll.config (a Mono dllmap), found
        // by the dynamic loader (LD_LIBRARY_PATH, an installed prefix, ldconfig).
        const string Lib = "inlay";

        [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
        [return: MarshalAs(UnmanagedType.U1)]
        internal delegate bool TokenFn(int token, IntPtr piece, UIntPtr pieceLen, IntPtr user);

        [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
        [return: MarshalAs(UnmanagedType.U1)]
        internal delegate bool ProgressFn(float progress, IntPtr user);

        [StructLayout(LayoutKind.Sequential)]
        internal struct inlay_model_params
        {
            public UIntPtr struct_size;
            public int n_threads;
            public int context_length;
            public IntPtr progress;
            public IntPtr progress_user;
            public IntPtr kv_pool;
            public long kv_budget_bytes;
            public int kv_block_size;
            public int batch_tokens;
            public int device;
            public int device_index;
            public double kv_memory_fraction;
        }

        [StructLayout(LayoutKind.Sequential)]
        internal struct inlay_model_info
        {
            public UIntPtr struct_size;
            public IntPtr architecture;
            public IntPtr name;
            public long n_params;
            public long file_bytes;
            public int n_vocab;
            public int n_embd;
            public int n_layers;
            public int n_heads;
            public int n_kv_heads;
            public int head_dim;
            public int n_ff;
            public int context_length;
            public int train_context_length;
            public int bos_token;
            public int eos_token;
            public IntPtr device;
        }

        [StructLayout(LayoutKind.Sequential)]
        internal struct inlay_session_params
        {
            public UIntPtr struct_size;
            public int context_length;
            public int reserved;
            public int speculation;
            public IntPtr draft_model;
            public int n_draft;
            public int n_draft_min;
            public float p_min;
        }

        [StructLayout(LayoutKind.Sequential)]
        internal struct inlay_generate_params
        {
            public UIntPtr struct_size;
            public int max_tokens;
            public float temperature;
            public int top_k;
            public float top_p;
            public float min_p;
            public float repeat_penalty;
            public float frequency_penalty;
            public float presence_penalty;
            public int penalty_last_n;
            public ulong seed;
            [MarshalAs(UnmanagedType.U1)] public bool ignore_eos;
            public IntPtr stop;
            public UIntPtr n_stop;
            [MarshalAs(UnmanagedType.U1)] public bool add_bos;
            [MarshalAs(UnmanagedType.U1)] public bool parse_special;
            public IntPtr on_token;
            public IntPtr user;
        }

        [StructLayout(LayoutKind.Sequential)]
        internal struct inlay_timings
        {
            public UIntPtr struct_size;
            public long prompt_tokens;
            public long generated_tokens;
            public double prefill_s;
            public double decode_s;
            public double prefill_tokens_per_s;
            public double decode_tokens_per_s;
            public long prompt_tokens_reused;
            public long draft_tokens_proposed;
            public long draft_tokens_accepted;
        }

        [StructLayout(LayoutKind.Sequential)]
        internal struct inlay_metrics
        {
            public UIntPtr struct_size;
            public long blocks_total;
            public long blocks_free;
            public long blocks_cached;
            public long blocks_shared;
            public long blocks_held;
            public long block_cap;
            public int block_size;
            public int sessions;
            public int sequences_running;
            public int sequences_waiting;
            public long preemptions;
            public long kv_full_failures;
            public long tokens_prefilled;
            public long tokens_generated;
            public long prefix_tokens_reused;
            public long steps;
            public double step_seconds_mean;
            public double step_seconds_max;
            public double step_seconds_last;
            public double busy_seconds;
            public double generated_tokens_per_s;
            public long draft_rounds;
            public long draft_tokens_proposed;
            public long draft_tokens_accepted;
            public double draft_acceptance_rate;
            public long draft_passes;
            public double draft_seconds;
            public long steps_ids_only;
            public long steps_pipelined;
        }

        [StructLayout(LayoutKind.Sequential)]
        internal struct inlay_chat_message
        {
            public IntPtr role;
            public IntPtr content;
        }

        [StructLayout(LayoutKind.Sequential)]
        internal struct inlay_chat_params
        {
            public UIntPtr struct_size;
            public int thinking;
            [MarshalAs(UnmanagedType.U1)] public bool add_generation_prompt;
            public IntPtr chat_template;
        }

        // Strings go in as NUL-terminated UTF-8 byte arrays (Utf8.Encode), whatever the
        // runtime's default string marshalling is.
        [DllImport(Lib)] internal static extern int inlay_abi_version();
        [DllImport(Lib)] internal static extern IntPtr inlay_version();
        [DllImport(Lib)] internal static extern IntPtr inlay_status_name(Status status);
        [DllImport(Lib)] internal static extern IntPtr inlay_last_error();

        [DllImport(Lib)] internal static extern void inlay_model_params_init_size(ref inlay_model_params p, UIntPtr size);
        [DllImport(Lib)] internal static extern Status inlay_model_load(byte[] path, ref inlay_model_params p, out ModelHandle model);
        [DllImport(Lib)] internal static extern void inlay_model_free(IntPtr model);
        [DllImport(Lib)] internal static extern Status inlay_model_get_info(ModelHandle model, ref inlay_model_info info);
        [DllImport(Lib)] internal static extern Status inlay_model_get_metrics(ModelHandle model, ref inlay_metrics metrics);
        [DllImport(Lib)] internal static extern Status inlay_tokenize(ModelHandle model, byte[] text, UIntPtr len, uint flags,
                                                                      int[] output, UIntPtr capacity, out UIntPtr nTokens);

        [DllImport(Lib)] internal static extern void inlay_session_params_init_size(ref inlay_session_params p, UIntPtr size);
        [DllImport(Lib)] internal static extern Status inlay_session_create(ModelHandle model, ref inlay_session_params p, out IntPtr session);
        [DllImport(Lib)] internal static extern void inlay_session_free(IntPtr session);
        [DllImport(Lib)] internal static extern Status inlay_session_reset(SessionHandle session);
        [DllImport(Lib)] internal static extern Status inlay_session_n_tokens(SessionHandle session, out UIntPtr n);
        [DllImport(Lib)] internal static extern Status inlay_session_cancel(SessionHandle session);

        [DllImport(Lib)] internal static extern void inlay_generate_params_init_size(ref inlay_generate_params p, UIntPtr size);
        [DllImport(Lib)] internal static extern Status inlay_session_generate(SessionHandle session, byte[] prompt,
                                                                              ref inlay_generate_params p, out IntPtr result);
        [DllImport(Lib)] internal static extern void inlay_result_free(IntPtr result);
        [DllImport(Lib)] internal static extern IntPtr inlay_result_text(IntPtr result);
        [DllImport(Lib)] internal static extern IntPtr inlay_result_tokens(IntPtr result, out UIntPtr n);
        [DllImport(Lib)] internal static extern IntPtr inlay_result_prompt_tokens(IntPtr result, out UIntPtr n);
        [DllImport(Lib)] internal static extern StopReason inlay_result_stop_reason(IntPtr result);
        [DllImport(Lib)] internal static extern Status inlay_result_timings(IntPtr result, ref inlay_timings timings);

        [DllImport(Lib)] internal static extern void inlay_chat_params_init_size(ref inlay_chat_params p, UIntPtr size);
        [DllImport(Lib)] internal static extern Status inlay_chat_apply_template(ModelHandle model, inlay_chat_message[] messages,
                                                                                 UIntPtr n, ref inlay_chat_params p, byte[] output,
                                                                                 UIntPtr capacity, out UIntPtr length);
        [DllImport(Lib)] internal static extern Status inlay_session_chat(SessionHandle session, inlay_chat_message[] messages,
                                                                          UIntPtr n, ref inlay_chat_params chatParams,
                                                                          ref inlay_generate_params genParams, out IntPtr result);

        internal static UIntPtr SizeOf<T>() { return (UIntPtr)Marshal.SizeOf(typeof(T)); }
    }
}
