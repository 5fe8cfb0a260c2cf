/* Copyright (c) 2022, NVIDIA CORPORATION. All rights reserved.
 *
 * Redistribution and use in source and binary forms, with or without
 * modification, are permitted provided that the following conditions
 * are met:
 *  * Redistributions of source code must retain the above copyright
 *    notice, this list of conditions and the following disclaimer.
 *  * Redistributions in binary form must reproduce the above copyright
 *    notice, this list of conditions and the following disclaimer in the
 *    documentation and/or other materials provided with the distribution.
 *  * Neither the name of NVIDIA CORPORATION nor the names of its
 *    contributors may be used to endorse or promote products derived
 *    from this software without specific prior written permission.
 *
 * THIS SOFTWARE IS PROVIDED BY THE COPYRIGHT HOLDERS ``AS IS'' AND ANY
 * EXPRESS OR IMPLIED WARRANTIES, INCLUDING, BUT NOT LIMITED TO, THE
 * IMPLIED WARRANTIES OF MERCHANTABILITY AND FITNESS FOR A PARTICULAR
 * PURPOSE ARE DISCLAIMED.  IN NO EVENT SHALL THE COPYRIGHT OWNER OR
 * CONTRIBUTORS BE LIABLE FOR ANY DIRECT, INDIRECT, INCIDENTAL, SPECIAL,
 * EXEMPLARY, OR CONSEQUENTIAL DAMAGES (INCLUDING, BUT NOT LIMITED TO,
 * PROCUREMENT OF SUBSTITUTE GOODS OR SERVICES; LOSS OF USE, DATA, OR
 * PROFITS; OR BUSINESS INTERRUPTION) HOWEVER CAUSED AND ON ANY THEORY
 * OF LIABILITY, WHETHER IN CONTRACT, STRICT LIABILITY, OR TORT
 * (INCLUDING NEGLIGENCE OR OTHERWISE) ARISING IN ANY WAY OUT OF THE USE
 * OF THIS SOFTWARE, EVEN IF ADVISED OF THE POSSIBILITY OF SUCH DAMAGE.
 */

/* A same-card peer for the GPU bundle (issue 23 item 5): the force and
 * integration kernels of NVIDIA's cuda-samples `nbody`
 * (https://github.com/NVIDIA/cuda-samples, Samples/5_Domain_Specific/nbody/
 * bodysystemcuda.cu at c94ff366: bodyBodyInteraction, computeBodyAccel,
 * integrateBodies), single precision, one device, as the sample runs them
 * (block 256, `#pragma unroll 128`, one launch per step), with the OpenGL,
 * multi-device and fp64 parts and the helper headers left out. What is ours:
 * this comment, the float4/float3 types in place of the sample's vec3/vec4
 * templates, the softening as a __constant__ set from main, and main.
 *
 *   nvcc -O3 -arch=sm_90 [-use_fast_math] -o nbody_peer cuda_samples_nbody.cu
 *   ./nbody_peer N STEPS [BLOCK]   -> peer=cuda-samples-nbody ... pips=...
 *
 * The metric is ours and the Numba peer's: N^2 interactions per step, whole
 * steps (the one launch that computes forces and integrates), timed with
 * CUDA events, best of 3 runs of STEPS steps after a warm-up step. N must be
 * a multiple of BLOCK (the sample's kernel returns before its barriers for
 * threads past N). The warm-up step starts from rest, so its velocities are
 * the accelerations times dt: the first bodies are checked against float64
 * on the host before anything is timed.
 */

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include <cooperative_groups.h>
#include <cuda_runtime.h>

namespace cg = cooperative_groups;

#define CHECK(call)                                                                      \
    do {                                                                                 \
        cudaError_t e_ = (call);                                                         \
        if (e_ != cudaSuccess) {                                                         \
            std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
            std::exit(1);                                                                \
        }                                                                                \
    } while (0)

__constant__ float softeningSquared;

__device__ float3 bodyBodyInteraction(float3 ai, float4 bi, float4 bj)
{
    float3 r;

    // r_ij  [3 FLOPS]
    r.x = bj.x - bi.x;
    r.y = bj.y - bi.y;
    r.z = bj.z - bi.z;

    // distSqr = dot(r_ij, r_ij) + EPS^2  [6 FLOPS]
    float distSqr = r.x * r.x + r.y * r.y + r.z * r.z;
    distSqr += softeningSquared;

    // invDistCube =1/distSqr^(3/2)  [4 FLOPS (2 mul, 1 sqrt, 1 inv)]
    float invDist     = rsqrtf(distSqr);
    float invDistCube = invDist * invDist * invDist;

    // s = m_j * invDistCube [1 FLOP]
    float s = bj.w * invDistCube;

    // a_i =  a_i + s * r_ij [6 FLOPS]
    ai.x += r.x * s;
    ai.y += r.y * s;
    ai.z += r.z * s;

    return ai;
}

__device__ float3 computeBodyAccel(float4 bodyPos, float4 *positions, int numTiles, cg::thread_block cta)
{
    extern __shared__ float4 sharedPos[];

    float3 acc = {0.0f, 0.0f, 0.0f};

    for (int tile = 0; tile < numTiles; tile++) {
        sharedPos[threadIdx.x] = positions[tile * blockDim.x + threadIdx.x];

        cg::sync(cta);

// This is the "tile_calculation" from the GPUG3 article.
#pragma unroll 128

        for (unsigned int counter = 0; counter < blockDim.x; counter++) {
            acc = bodyBodyInteraction(acc, bodyPos, sharedPos[counter]);
        }

        cg::sync(cta);
    }

    return acc;
}

__global__ void integrateBodies(float4 *__restrict__ newPos,
                                float4 *__restrict__ oldPos,
                                float4      *vel,
                                unsigned int deviceOffset,
                                unsigned int deviceNumBodies,
                                float        deltaTime,
                                float        damping,
                                int          numTiles)
{
    // Handle to thread block group
    cg::thread_block cta   = cg::this_thread_block();
    int              index = blockIdx.x * blockDim.x + threadIdx.x;

    if (index >= deviceNumBodies) {
        return;
    }

    float4 position = oldPos[deviceOffset + index];

    float3 accel = computeBodyAccel(position, oldPos, numTiles, cta);

    // acceleration = force / mass;
    // new velocity = old velocity + acceleration * deltaTime
    float4 velocity = vel[deviceOffset + index];

    velocity.x += accel.x * deltaTime;
    velocity.y += accel.y * deltaTime;
    velocity.z += accel.z * deltaTime;

    velocity.x *= damping;
    velocity.y *= damping;
    velocity.z *= damping;

    // new position = old position + velocity * deltaTime
    position.x += velocity.x * deltaTime;
    position.y += velocity.y * deltaTime;
    position.z += velocity.z * deltaTime;

    // store new position and velocity
    newPos[deviceOffset + index] = position;
    vel[deviceOffset + index]    = velocity;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        std::fprintf(stderr, "usage: %s N STEPS [BLOCK]\n", argv[0]);
        return 2;
    }
    const long n     = std::atol(argv[1]);
    const int  steps = std::atoi(argv[2]);
    const int  block = argc > 3 ? std::atoi(argv[3]) : 256;
    if (n <= 0 || steps <= 0 || block <= 0 || block > 1024 || n % block != 0) {
        std::fprintf(stderr, "bad N=%ld STEPS=%d BLOCK=%d (N a positive multiple of BLOCK <= 1024)\n", n, steps, block);
        return 3;
    }
    const float eps2 = 0.01f, dt = 0.001f, damping = 1.0f;
    CHECK(cudaMemcpyToSymbol(softeningSquared, &eps2, sizeof(float)));

    // Positions uniform in [-1, 1]^3, unit masses, at rest (the Numba peer's bodies).
    std::mt19937                          rng(1);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    std::vector<float4>                   pos(n), vel(n, make_float4(0.0f, 0.0f, 0.0f, 0.0f));
    for (long i = 0; i < n; i++) {
        pos[i].x = u(rng);
        pos[i].y = u(rng);
        pos[i].z = u(rng);
        pos[i].w = 1.0f;
    }
    float4 *dPos[2], *dVel;
    const size_t bytes = n * sizeof(float4);
    CHECK(cudaMalloc(&dPos[0], bytes));
    CHECK(cudaMalloc(&dPos[1], bytes));
    CHECK(cudaMalloc(&dVel, bytes));
    CHECK(cudaMemcpy(dPos[0], pos.data(), bytes, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dVel, vel.data(), bytes, cudaMemcpyHostToDevice));

    const int numBlocks = (int)((n + block - 1) / block), numTiles = numBlocks;
    const int shared    = block * 4 * (int)sizeof(float);
    int       current   = 0;
    auto      step      = [&]() {
        integrateBodies<<<numBlocks, block, shared>>>(dPos[1 - current], dPos[current], dVel, 0, (unsigned)n, dt,
                                                      damping, numTiles);
        current = 1 - current;
    };

    // Warm-up step from rest: velocity = a dt; check the first bodies in f64.
    step();
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(vel.data(), dVel, bytes, cudaMemcpyDeviceToHost));
    for (long i = 0; i < 8 && i < n; i++) {
        double ref[3] = {0, 0, 0}, scale = 0;
        for (long j = 0; j < n; j++) {
            double d[3] = {(double)pos[j].x - pos[i].x, (double)pos[j].y - pos[i].y, (double)pos[j].z - pos[i].z};
            double r2   = d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + eps2;
            double s    = pos[j].w / (r2 * std::sqrt(r2));
            for (int c = 0; c < 3; c++)
                ref[c] += d[c] * s;
        }
        for (int c = 0; c < 3; c++)
            scale = std::fmax(scale, std::fabs(ref[c]));
        double got[3] = {vel[i].x / dt, vel[i].y / dt, vel[i].z / dt};
        for (int c = 0; c < 3; c++) {
            if (!(std::fabs(got[c] - ref[c]) <= 1e-3 * scale + 1e-3 * std::fabs(ref[c]))) {
                std::fprintf(stderr, "body %ld component %d: %g, float64 %g\n", i, c, got[c], ref[c]);
                return 5;
            }
        }
    }

    cudaEvent_t start, stop;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&stop));
    float best = INFINITY;
    for (int run = 0; run < 3; run++) {
        CHECK(cudaEventRecord(start));
        for (int s = 0; s < steps; s++)
            step();
        CHECK(cudaEventRecord(stop));
        CHECK(cudaEventSynchronize(stop));
        CHECK(cudaGetLastError());
        float ms = 0;
        CHECK(cudaEventElapsedTime(&ms, start, stop));
        best = std::fmin(best, ms);
    }
    const double seconds = best / 1e3;
#ifdef __FAST_MATH__
    const char *variant = "fast-math";
#else
    const char *variant = "default";
#endif
    std::printf("peer=cuda-samples-nbody variant=%s n=%ld steps=%d block=%d seconds=%.6f pips=%.6e\n", variant, n,
                steps, block, seconds, (double)n * (double)n * steps / seconds);
    return 0;
}
